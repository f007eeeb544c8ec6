//! What a request counts against: the origin it is sent to.

use std::fmt;

use http::Uri;

/// The origin of a request, `scheme://authority`, written only when someone reads it (a
/// tracing event), so naming it costs nothing on the happy path.
pub(crate) struct Origin<'a>(pub(crate) &'a Uri);

impl fmt::Display for Origin<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0.scheme_str(), self.0.authority()) {
            (Some(scheme), Some(authority)) => write!(f, "{scheme}://{authority}"),
            (None, Some(authority)) => write!(f, "{authority}"),
            _ => f.write_str("(no authority)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_scheme_and_authority() {
        let uri: Uri = "https://api.test:8443/v1/items?page=2".parse().unwrap();
        assert_eq!(Origin(&uri).to_string(), "https://api.test:8443");
        let relative: Uri = "/v1/items".parse().unwrap();
        assert_eq!(Origin(&relative).to_string(), "(no authority)");
        let authority_only: Uri = "api.test:80".parse().unwrap();
        assert_eq!(Origin(&authority_only).to_string(), "api.test:80");
    }
}
