//! Answers that may not be the answer to the request sent: a client that follows redirects
//! below the layer (reqwest does) hands back the last hop's response or error, once the server
//! has run the request it was sent and answered it with the redirect.

use http::Response;

use crate::BoxError;

/// In a response's extensions: the client followed a redirect to get it.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "reqwest"), allow(dead_code))]
pub(crate) struct Redirected;

/// Whether `outcome` came, or may have come, after a redirect: whatever it says, the request
/// the layer sent may have been run by the server that redirected it, so it is no refusal of
/// that request, and no failure known to come before it was sent.
pub(crate) fn after_redirect<R>(outcome: &Result<Response<R>, BoxError>) -> bool {
    match outcome {
        Ok(response) => response.extensions().get::<Redirected>().is_some(),
        Err(error) => follows_redirects(error),
    }
}

/// Whether `error` is a client's that follows redirects without saying whether the error was a
/// redirect's: reqwest tells a later hop's error under the URL first asked.
#[cfg(feature = "reqwest")]
fn follows_redirects(error: &BoxError) -> bool {
    error.is::<reqwest_middleware::Error>()
}

#[cfg(not(feature = "reqwest"))]
fn follows_redirects(_error: &BoxError) -> bool {
    false
}
