//! A real hyper server on 127.0.0.1:0 that answers from a script and counts what it received,
//! by method and path, with the (tokio) time each request arrived.

#![allow(dead_code)] // each test file uses its own part of the support

pub mod raw;
pub mod token_api;
pub mod vectors;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::time::Instant;

/// What the server answers: a status and headers, for the `nth` (from 0) request with this
/// method and path.
pub type Script = dyn Fn(&Method, &str, usize) -> (u16, Vec<(&'static str, String)>) + Send + Sync;

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: Method,
    pub path: String,
    pub at: Instant,
    pub body: Bytes,
}

/// Where a server listens, every request it received, and how many connections are open.
#[derive(Clone)]
pub struct Counted {
    pub address: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    open: Arc<AtomicUsize>,
}

impl Counted {
    fn new(address: SocketAddr) -> Self {
        Counted {
            address,
            received: Arc::default(),
            open: Arc::default(),
        }
    }

    /// How many connections are open now.
    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// How many requests arrived with this method and path.
    pub fn count(&self, method: &str, path: &str) -> usize {
        self.arrivals(method, path).len()
    }

    /// When each request with this method and path arrived.
    pub fn arrivals(&self, method: &str, path: &str) -> Vec<Instant> {
        self.received()
            .into_iter()
            .filter(|r| r.method == method && r.path == path)
            .map(|r| r.at)
            .collect()
    }

    /// Every request, in order of arrival.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Records a request that arrived `at`; says how many with its method and path came before.
    fn record(&self, method: &Method, path: &str, at: Instant, body: Bytes) -> usize {
        let mut log = self.received.lock().unwrap();
        let nth = log
            .iter()
            .filter(|r| r.method == method && r.path == path)
            .count();
        log.push(Received {
            method: method.clone(),
            path: path.to_owned(),
            at,
            body,
        });
        nth
    }
}

/// The server: its address and what it received.
pub type TestServer = Counted;

impl TestServer {
    /// Starts a server answering from `script`, every answer with the body `{}`.
    pub async fn start(
        script: impl Fn(&Method, &str, usize) -> (u16, Vec<(&'static str, String)>)
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self::start_with_body(script, Bytes::from_static(b"{}")).await
    }

    /// Starts a server answering from `script`, every answer with `body`.
    pub async fn start_with_body(
        script: impl Fn(&Method, &str, usize) -> (u16, Vec<(&'static str, String)>)
        + Send
        + Sync
        + 'static,
        body: Bytes,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = Counted::new(listener.local_addr().unwrap());
        let script: Arc<Script> = Arc::new(script);
        let log = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (log, script, body) = (log.clone(), script.clone(), body.clone());
                let open = log.open.clone();
                let service = service_fn(move |request| {
                    answer(log.clone(), script.clone(), body.clone(), request)
                });
                open.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        server
    }
}

async fn answer(
    log: Counted,
    script: Arc<Script>,
    body: Bytes,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let at = Instant::now();
    let received = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let nth = log.record(&method, &path, at, received);
    let (status, headers) = script(&method, &path, nth);
    let mut response = Response::builder().status(StatusCode::from_u16(status).unwrap());
    for (name, value) in headers {
        response = response.header(name, value);
    }
    Ok(response.body(Full::new(body)).unwrap())
}

/// A plain hyper-util client for bodies of type `B`.
pub fn client<B>() -> Client<HttpConnector, B>
where
    B: hyper::body::Body + Send + 'static + Unpin,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    Client::builder(TokioExecutor::new()).build_http()
}

/// `(name, value)` for a header list.
pub fn header(name: &'static str, value: impl ToString) -> (&'static str, String) {
    (name, value.to_string())
}

/// Answers `status` (with `headers`) to the first `times` requests on each path, 200 after: a
/// server's answer function for [`TestServer::start`].
pub fn fails(
    status: u16,
    times: usize,
    headers: Vec<(&'static str, String)>,
) -> impl Fn(&Method, &str, usize) -> (u16, Vec<(&'static str, String)>) {
    move |_, _, nth| {
        if nth < times {
            (status, headers.clone())
        } else {
            (200, vec![])
        }
    }
}
