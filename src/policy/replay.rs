//! Request bodies that may be sent again.

use bytes::{Buf, Bytes};
use http_body::Body;
use http_body_util::combinators::{BoxBody, UnsyncBoxBody};
use http_body_util::{Either, Empty, Full};

/// A request body that can be sent again for a retry; what [`StatusPolicy`](super::StatusPolicy)
/// replays requests with.
///
/// Bodies held in memory (`Full`, `Empty`, `String`, `Vec<u8>`, `Bytes`, `()`) copy themselves.
/// Boxed bodies replay only when they say they ended (`is_end_stream`: no data and no
/// trailers, nothing to lose); any other boxed or streaming body answers `None`, and its
/// request is sent once and never retried. An `Either` of two replays as the side it holds
/// does.
///
/// A body type that implements none of this (axum's `Body`, a stream) does not compile under
/// the default policy; the recipes, each named in that compile error too:
///
/// - **Buffer it**, with a size limit, into `Full<Bytes>`: it then replays. A proxy forwarding
///   axum's `Body` buffers what fits and streams the rest, sent once, in one body type,
///   `Either<Full<Bytes>, UnsyncBoxBody<Bytes, E>>`: the `axum_proxy` example is that recipe,
///   and its test counts a buffered request retried and a streamed one sent once.
/// - **Send it once**: box it (`BodyExt::boxed_unsync`); a boxed body that is not empty is
///   never retried. hyper's `Incoming` is sent once as it is.
/// - **A body type of your own**: implement this trait; for a body type from another crate,
///   copy it with [`clone_body_fn`](super::clone_body_fn), or combine
///   [`StatusPolicy::action`](super::StatusPolicy::action) with your own
///   [`Policy::clone_body`](super::Policy::clone_body).
///
/// # Example
///
/// ```
/// use tower_retry_after::policy::ReplayBody;
///
/// #[derive(Clone)]
/// struct JsonBody(bytes::Bytes);
///
/// impl ReplayBody for JsonBody {
///     fn replay(&self) -> Option<Self> {
///         Some(self.clone())
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a request body the layer can send again: it does not implement `ReplayBody`",
    label = "the default policy (`StatusPolicy`) replays request bodies through `ReplayBody`",
    note = "buffer it, with a size limit, into `Full<Bytes>`, which replays (axum's `Body`: the `axum_proxy` example does it, streaming what is over the limit)",
    note = "or send it once, never retried: box it (`BodyExt::boxed_unsync`), as hyper's `Incoming` is sent once",
    note = "or, for a body type of your own, implement `ReplayBody`, or copy it with `policy::clone_body_fn`"
)]
pub trait ReplayBody: Sized {
    /// A copy of this body to send again; `None` if it cannot be replayed.
    fn replay(&self) -> Option<Self>;
}

impl<D: Clone> ReplayBody for Full<D> {
    fn replay(&self) -> Option<Self> {
        Some(self.clone())
    }
}

impl<D> ReplayBody for Empty<D> {
    fn replay(&self) -> Option<Self> {
        Some(Empty::new())
    }
}

impl ReplayBody for String {
    fn replay(&self) -> Option<Self> {
        Some(self.clone())
    }
}

impl ReplayBody for Vec<u8> {
    fn replay(&self) -> Option<Self> {
        Some(self.clone())
    }
}

impl ReplayBody for Bytes {
    fn replay(&self) -> Option<Self> {
        Some(self.clone())
    }
}

impl ReplayBody for () {
    fn replay(&self) -> Option<Self> {
        Some(())
    }
}

impl<D: Buf + 'static, E> ReplayBody for BoxBody<D, E> {
    fn replay(&self) -> Option<Self> {
        is_empty(self).then(BoxBody::default)
    }
}

impl<D: Buf + 'static, E> ReplayBody for UnsyncBoxBody<D, E> {
    fn replay(&self) -> Option<Self> {
        is_empty(self).then(UnsyncBoxBody::default)
    }
}

/// Whichever body it holds replays as that body does: what lets one body type be buffered
/// (replayed) for some requests and streamed (sent once) for others.
impl<L: ReplayBody, R: ReplayBody> ReplayBody for Either<L, R> {
    fn replay(&self) -> Option<Self> {
        match self {
            Either::Left(body) => body.replay().map(Either::Left),
            Either::Right(body) => body.replay().map(Either::Right),
        }
    }
}

/// A body that says it holds nothing more: no data, and no trailers either (a size hint of
/// zero counts data alone).
fn is_empty(body: &impl Body) -> bool {
    body.is_end_stream()
}

#[cfg(feature = "hyper-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "hyper-util")))]
impl ReplayBody for hyper::body::Incoming {
    /// A body streaming in from a connection cannot be read twice.
    fn replay(&self) -> Option<Self> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn bodies_in_memory_replay() {
        assert!(Full::new(Bytes::from_static(b"x")).replay().is_some());
        assert!(Empty::<Bytes>::new().replay().is_some());
        assert_eq!("x".to_owned().replay().as_deref(), Some("x"));
        assert_eq!(vec![1u8].replay(), Some(vec![1]));
        assert_eq!(
            Bytes::from_static(b"x").replay(),
            Some(Bytes::from_static(b"x"))
        );
        assert_eq!(().replay(), Some(()));
    }

    #[test]
    fn boxed_bodies_replay_only_when_empty() {
        let empty: BoxBody<Bytes, std::convert::Infallible> = Empty::new().boxed();
        assert!(empty.replay().is_some());
        let full: BoxBody<Bytes, std::convert::Infallible> =
            Full::new(Bytes::from_static(b"x")).boxed();
        assert!(full.replay().is_none());
        let unsync: UnsyncBoxBody<Bytes, std::convert::Infallible> =
            Full::new(Bytes::from_static(b"x")).boxed_unsync();
        assert!(unsync.replay().is_none());
        let unsync_empty: UnsyncBoxBody<Bytes, std::convert::Infallible> =
            Empty::new().boxed_unsync();
        assert!(unsync_empty.replay().is_some());
    }

    #[test]
    fn an_either_replays_as_the_side_it_holds() {
        type Forwarded = Either<Full<Bytes>, UnsyncBoxBody<Bytes, std::convert::Infallible>>;
        let buffered: Forwarded = Either::Left(Full::new(Bytes::from_static(b"x")));
        assert!(matches!(buffered.replay(), Some(Either::Left(_))));
        let streamed: Forwarded = Either::Right(Full::new(Bytes::from_static(b"x")).boxed_unsync());
        assert!(streamed.replay().is_none());
        let empty_stream: Forwarded = Either::Right(Empty::new().boxed_unsync());
        assert!(matches!(empty_stream.replay(), Some(Either::Right(_))));
    }

    /// A body that says it ended, or only that it holds no data; a body holding no data may
    /// still hold trailers, which `poll_frame` gives.
    struct Says {
        ended: bool,
        exact_zero: bool,
    }

    impl Body for Says {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            std::task::Poll::Ready(None)
        }

        fn is_end_stream(&self) -> bool {
            self.ended
        }

        fn size_hint(&self) -> http_body::SizeHint {
            if self.exact_zero {
                http_body::SizeHint::with_exact(0)
            } else {
                http_body::SizeHint::default()
            }
        }
    }

    #[test]
    fn a_boxed_body_replays_only_once_it_says_it_ended() {
        let ended = Says {
            ended: true,
            exact_zero: false,
        };
        assert!(ended.boxed().replay().is_some());
        for exact_zero in [true, false] {
            let body = Says {
                ended: false,
                exact_zero,
            };
            assert!(
                body.boxed_unsync().replay().is_none(),
                "no data (exact zero {exact_zero}) is not nothing: trailers may follow"
            );
        }
    }
}
