//! Field lines as text, and the members of a comma-separated line.

use std::borrow::Cow;

use http::HeaderMap;

/// Each field line of `name` as text, surrounding whitespace trimmed.
///
/// A line holding bytes other than visible ASCII is skipped: no rate-limit format puts them in
/// a value, so such a line carries no figure the parser could trust.
pub(crate) fn lines<'a>(
    headers: &'a HeaderMap,
    name: &'static str,
) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .map(trim_whitespace)
}

/// Every field line of `name` joined with `", "`, as RFC 9110 §5.3 combines them; `None` if
/// no line holds anything, or if a line holds bytes other than visible ASCII (a structured
/// field with such a line fails as a whole). Empty lines add no member.
pub(crate) fn combined<'a>(headers: &'a HeaderMap, name: &'static str) -> Option<Cow<'a, str>> {
    let mut joined: Option<Cow<'a, str>> = None;
    for value in headers.get_all(name) {
        let line = trim_whitespace(value.to_str().ok()?);
        match &mut joined {
            _ if line.is_empty() => {}
            None => joined = Some(Cow::Borrowed(line)),
            Some(field) => {
                let field = field.to_mut();
                field.push_str(", ");
                field.push_str(line);
            }
        }
    }
    joined
}

/// The members of a comma-separated line, each trimmed.
///
/// An HTTP-date carries a comma of its own (`Tue, 14 Nov 2023 …`): a member that is only a day
/// name is joined with the one after it, so the date stays whole.
pub(crate) fn members(line: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(line);
    std::iter::from_fn(move || {
        let text = rest?;
        let mut end = text.find(',');
        if let Some(comma) = end {
            if is_day_name(text[..comma].trim()) {
                end = text[comma + 1..].find(',').map(|next| comma + 1 + next);
            }
        }
        let member = match end {
            Some(comma) => {
                rest = Some(&text[comma + 1..]);
                &text[..comma]
            }
            None => {
                rest = None;
                text
            }
        };
        Some(trim_whitespace(member))
    })
}

fn trim_whitespace(text: &str) -> &str {
    text.trim_matches([' ', '\t'])
}

fn is_day_name(text: &str) -> bool {
    (3..=9).contains(&text.len()) && text.bytes().all(|byte| byte.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_split_on_commas_and_trim() {
        let got: Vec<_> = members(" 120 ,30,\t7 ").collect();
        assert_eq!(got, ["120", "30", "7"]);
    }

    #[test]
    fn members_keep_http_dates_whole() {
        let got: Vec<_> = members(
            "Fri, 31 Dec 1999 23:59:59 GMT, 120, Tuesday, 14-Nov-23 22:14:20 GMT, Tue Nov 14 22:14:20 2023",
        )
        .collect();
        assert_eq!(
            got,
            [
                "Fri, 31 Dec 1999 23:59:59 GMT",
                "120",
                "Tuesday, 14-Nov-23 22:14:20 GMT",
                "Tue Nov 14 22:14:20 2023"
            ]
        );
    }

    #[test]
    fn members_of_an_empty_line_is_one_empty_member() {
        assert_eq!(members("").collect::<Vec<_>>(), [""]);
        assert_eq!(members("1,,2").collect::<Vec<_>>(), ["1", "", "2"]);
    }

    #[test]
    fn combined_joins_lines_and_skips_empty_ones() {
        let mut headers = HeaderMap::new();
        assert_eq!(combined(&headers, "x"), None);
        headers.append("x", http::HeaderValue::from_static(""));
        assert_eq!(combined(&headers, "x"), None);
        headers.append("x", http::HeaderValue::from_static(" a;r=1 "));
        assert!(matches!(
            combined(&headers, "x"),
            Some(Cow::Borrowed("a;r=1"))
        ));
        headers.append("x", http::HeaderValue::from_static("b;r=2"));
        assert_eq!(combined(&headers, "x").as_deref(), Some("a;r=1, b;r=2"));
        headers.append("x", http::HeaderValue::from_bytes(b"\xff").unwrap());
        assert_eq!(combined(&headers, "x"), None);
    }

    #[test]
    fn lines_skip_values_that_are_not_visible_ascii() {
        let mut headers = HeaderMap::new();
        headers.append("x", http::HeaderValue::from_bytes(b"\xff1").unwrap());
        headers.append("x", http::HeaderValue::from_static("  2\t"));
        assert_eq!(lines(&headers, "x").collect::<Vec<_>>(), ["2"]);
    }
}
