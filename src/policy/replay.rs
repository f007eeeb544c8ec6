//! Request bodies that may be sent again.

use bytes::{Buf, Bytes};
use http_body::Body;
use http_body_util::combinators::{BoxBody, UnsyncBoxBody};
use http_body_util::{Empty, Full};

/// A request body that can be sent again for a retry; what [`StatusPolicy`](super::StatusPolicy)
/// replays requests with.
///
/// Bodies held in memory (`Full`, `Empty`, `String`, `Vec<u8>`, `Bytes`, `()`) copy themselves.
/// Boxed bodies replay only when empty (nothing to lose); any other boxed or streaming body
/// answers `None`, and its request is sent once and never retried.
///
/// Implement it for a body type of your own; for a body type from another crate, combine
/// [`StatusPolicy::action`](super::StatusPolicy::action) with your own
/// [`Policy::clone_body`](super::Policy::clone_body).
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

/// A body that says it holds nothing more.
fn is_empty(body: &impl Body) -> bool {
    body.is_end_stream() || body.size_hint().exact() == Some(0)
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

    /// A body whose only sign of being empty is one of the two.
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
    fn a_boxed_body_is_empty_by_either_sign() {
        for (ended, exact_zero) in [(true, false), (false, true)] {
            let body = Says { ended, exact_zero }.boxed();
            assert!(
                body.replay().is_some(),
                "ended {ended}, exact zero {exact_zero}"
            );
        }
        let unknown = Says {
            ended: false,
            exact_zero: false,
        }
        .boxed_unsync();
        assert!(
            unknown.replay().is_none(),
            "a body that may hold more is not replayed"
        );
    }
}
