//! A server on 127.0.0.1:0 that writes its answers byte by byte, so that it can misbehave the
//! ways a real one does: reset the connection halfway through a response, answer late, close
//! without answering, or send header bytes no well-behaved library would let it write.
//! It counts what it received by method and path, like the hyper server beside it.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::Counted;

/// What the server does with one request it has read.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Waits `delay`, then answers `status` with these header lines (raw bytes) and `{}`.
    Answer {
        status: u16,
        headers: Vec<(String, Vec<u8>)>,
        delay: Duration,
    },
    /// Writes the start of a response head, then resets the connection.
    ResetInHead,
    /// Writes a whole head announcing 100 bytes of body, 10 of them, then resets.
    ResetInBody,
    /// Closes the connection without a word.
    CloseWithoutAnswer,
}

impl Reply {
    /// An immediate answer.
    pub fn status(status: u16) -> Self {
        Reply::Answer {
            status,
            headers: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    /// Adds a header line whose value is any bytes at all.
    pub fn header(mut self, name: &str, value: impl Into<Vec<u8>>) -> Self {
        if let Reply::Answer { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.into()));
        }
        self
    }

    /// Answers after `delay` (on the tokio clock).
    pub fn after(mut self, wait: Duration) -> Self {
        if let Reply::Answer { delay, .. } = &mut self {
            *delay = wait;
        }
        self
    }
}

/// What the server answers to the `nth` (from 0) request with this method and path.
pub type RawScript = dyn Fn(&Method, &str, usize) -> Reply + Send + Sync;

/// What the server answers to a request with this method and path, keeping its own record.
pub type UnloggedScript = dyn Fn(&Method, &str) -> Reply + Send + Sync;

/// How the server treats a connection.
#[derive(Clone)]
enum Behaviour {
    /// Reads requests, logs them, answers from the script.
    Logged(Arc<RawScript>),
    /// Reads requests and answers from the script, logging nothing: a long run's memory is
    /// then the client's alone.
    Unlogged(Arc<UnloggedScript>),
    /// Closes each connection before reading anything.
    CloseBeforeReading,
}

/// The server: its address, what it received (through `Deref`) and how many connections it
/// accepted.
#[derive(Clone)]
pub struct RawServer {
    counted: Counted,
    connections: Arc<AtomicUsize>,
}

impl Deref for RawServer {
    type Target = Counted;

    fn deref(&self) -> &Counted {
        &self.counted
    }
}

impl RawServer {
    /// Starts a server answering from `script`, several requests per connection.
    pub async fn start(
        script: impl Fn(&Method, &str, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        Self::listen(Behaviour::Logged(Arc::new(script))).await
    }

    /// Starts a server answering from `script`, which keeps its own record.
    pub async fn unlogged(script: impl Fn(&Method, &str) -> Reply + Send + Sync + 'static) -> Self {
        Self::listen(Behaviour::Unlogged(Arc::new(script))).await
    }

    /// Starts a server that accepts each connection and closes it before reading anything.
    pub async fn closing_before_reading() -> Self {
        Self::listen(Behaviour::CloseBeforeReading).await
    }

    async fn listen(behaviour: Behaviour) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = RawServer {
            counted: Counted::new(listener.local_addr().unwrap()),
            connections: Arc::default(),
        };
        let state = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                state.connections.fetch_add(1, Ordering::SeqCst);
                match &behaviour {
                    Behaviour::CloseBeforeReading => drop(stream),
                    answering => {
                        tokio::spawn(state.clone().serve(stream, answering.clone()));
                    }
                }
            }
        });
        server
    }

    /// How many connections were accepted.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    async fn serve(self, mut stream: TcpStream, behaviour: Behaviour) {
        let mut buffer = Vec::new();
        while let Some((method, path, body)) = read_request(&mut stream, &mut buffer).await {
            let reply = match &behaviour {
                Behaviour::Logged(script) => {
                    let nth = self.record(&method, &path, Instant::now(), body.into());
                    script(&method, &path, nth)
                }
                Behaviour::Unlogged(script) => script(&method, &path),
                Behaviour::CloseBeforeReading => return,
            };
            match reply {
                Reply::Answer {
                    status,
                    headers,
                    delay,
                } => {
                    tokio::time::sleep(delay).await;
                    let mut head = format!("HTTP/1.1 {status} Whatever\r\n").into_bytes();
                    for (name, value) in headers {
                        head.extend_from_slice(name.as_bytes());
                        head.extend_from_slice(b": ");
                        head.extend_from_slice(&value);
                        head.extend_from_slice(b"\r\n");
                    }
                    head.extend_from_slice(b"content-length: 2\r\n\r\n{}");
                    if stream.write_all(&head).await.is_err() {
                        return;
                    }
                }
                Reply::ResetInHead => return reset(stream, b"HTTP/1.1 200 OK\r\ncontent-le").await,
                Reply::ResetInBody => {
                    return reset(
                        stream,
                        b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{\"partial\"",
                    )
                    .await;
                }
                Reply::CloseWithoutAnswer => return,
            }
        }
    }
}

/// Writes `bytes`, then closes with a reset (SO_LINGER 0) instead of an orderly FIN.
async fn reset(mut stream: TcpStream, bytes: &[u8]) {
    let _ = stream.write_all(bytes).await;
    let _ = stream.flush().await;
    let _ = stream.set_zero_linger();
}

/// Reads one request (head and a `content-length` body) off the connection: its method, path
/// and body. `None` when the client closed it or sent something this server does not parse.
async fn read_request(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
) -> Option<(Method, String, Vec<u8>)> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let mut chunk = [0; 4096];
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = Method::from_bytes(request_line.next()?.as_bytes()).ok()?;
    let path = request_line.next()?.to_owned();
    let length = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let mut chunk = [0; 4096];
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let body = buffer[head_end..head_end + length].to_vec();
    buffer.drain(..head_end + length);
    Some((method, path, body))
}
