//! The JSON cursor against serde_json: the same texts accepted and refused, the same
//! strings decoded.

use super::*;

fn skip_all(text: &str) -> Scan<()> {
    let mut c = Cursor::new(text.as_bytes());
    c.skip()?;
    c.end()
}

#[test]
fn skips_what_serde_json_accepts_and_refuses_what_it_refuses() {
    let cases = [
        r#"{"a":[1,-2.5e+3,0,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"],"b":{}}"#,
        " [ ] ",
        "0",
        "-0.0E-0",
        "01",
        "1.",
        "-",
        ".5",
        "1e",
        "[1,]",
        "{\"a\" 1}",
        "{\"a\":1,}",
        "{,}",
        "\"\\x\"",
        "\"\\u12G4\"",
        "\"a\u{1}b\"",
        "tru",
        "nul",
        "{} x",
        "\"unterminated",
        "[[[[[[[[[[",
    ];
    for text in cases {
        let ours = skip_all(text).is_ok();
        let serde = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
        assert_eq!(ours, serde, "{text}");
    }
}

#[test]
fn special_bytes_are_found_at_every_offset() {
    for len in 0..40 {
        for at in 0..len {
            for special in [b'"', b'\\', 0x00, 0x1f] {
                let mut bytes: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                bytes[at] = special;
                if at + 1 < len {
                    bytes[at + 1] = b'"';
                }
                assert_eq!(special_at(&bytes), Some(at), "len {len} at {at}");
            }
        }
        let plain: Vec<u8> = (0..len)
            .map(|i| [b'a', 0x20, 0xff, 0x80, b'!'][i % 5])
            .collect();
        assert_eq!(special_at(&plain), None);
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    assert!(skip_all(&deep).is_err());
    let fine = "[".repeat(100) + &"]".repeat(100);
    assert!(skip_all(&fine).is_ok());
}

#[test]
fn strings_decode_like_serde_json() {
    for text in [
        r#""plain""#,
        r#""é and \u00e9""#,
        r#""\ud83d\ude00 pair""#,
        r#""tab\tquote\"slash\/""#,
    ] {
        let ours = Cursor::new(text.as_bytes()).string().unwrap();
        let serde: String = serde_json::from_str(text).unwrap();
        assert_eq!(ours, serde);
    }
    for bad in [r#""\ud83d alone""#, r#""\ude00""#, "\"\u{7}\""] {
        assert!(Cursor::new(bad.as_bytes()).string().is_err(), "{bad}");
        assert!(serde_json::from_str::<String>(bad).is_err(), "{bad}");
    }
    assert!(Cursor::new(b"\"\xff\"").string().is_err());
}

#[test]
fn unsigned_integers() {
    let read = |t: &str| Cursor::new(t.as_bytes()).opt_u32();
    assert_eq!(read("17").unwrap(), Some(17));
    assert_eq!(read("null").unwrap(), None);
    assert_eq!(read("4294967295").unwrap(), Some(u32::MAX));
    for bad in ["4294967296", "-1", "1.0", "1e3", "\"1\"", "01"] {
        let mut c = Cursor::new(bad.as_bytes());
        let ours = c.opt_u32().and_then(|_| c.end()).is_ok();
        assert!(!ours, "{bad}");
        assert!(serde_json::from_str::<Option<u32>>(bad).is_err(), "{bad}");
    }
}
