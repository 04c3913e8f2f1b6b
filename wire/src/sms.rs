//! The inbound SMS webhook's body: `application/x-www-form-urlencoded` fields, in order.

/// Every field of the form, in order (a repeated name appears once per occurrence).
pub fn parse_form(body: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

/// The first value of `name`.
pub fn field<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// The form text of `params` (the inverse of [`parse_form`] up to encoding choices).
pub fn encode_form(params: &[(String, String)]) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        out.append_pair(k, v);
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_order() {
        let p = parse_form(b"From=%2B13125550234&Body=STOP+now&Body=again&Empty=");
        assert_eq!(field(&p, "From"), Some("+13125550234"));
        assert_eq!(field(&p, "Body"), Some("STOP now"));
        assert_eq!(field(&p, "Empty"), Some(""));
        assert_eq!(field(&p, "To"), None);
        assert_eq!(parse_form(encode_form(&p).as_bytes()), p);
    }
}
