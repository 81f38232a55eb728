//! Times in tool arguments and tool output: the same forms as everywhere else in Cairn
//! ([`cairn::parse_time_ms`]), and RFC 3339 (UTC) for people reading the text.

use serde_json::Value;

use crate::error::ToolError;

/// A time argument `field` as ms since the epoch: an integer (ms), or a string in any form
/// [`cairn::parse_time_ms`] accepts (RFC 3339, a date and time read as UTC, a date).
pub(crate) fn time_ms(field: &str, value: &Value) -> Result<i64, ToolError> {
    let bad = || {
        ToolError::InvalidArguments(format!(
            "`{field}`: {value} is not a time: expected {}",
            cairn::TIME_FORMS
        ))
    };
    match value {
        Value::Number(n) => n.as_i64().ok_or_else(bad),
        Value::String(s) => cairn::parse_time_ms(s).ok_or_else(bad),
        _ => Err(bad()),
    }
}

pub(crate) use cairn::format_time_ms as format_ms;

/// A validity interval in words: `always`, `from T`, `until T`, `from T until U`.
pub(crate) fn format_validity(from_ms: Option<i64>, until_ms: Option<i64>) -> String {
    match (from_ms, until_ms) {
        (None, None) => "always".into(),
        (Some(f), None) => format!("from {}", format_ms(f)),
        (None, Some(u)) => format!("until {}", format_ms(u)),
        (Some(f), Some(u)) => format!("from {} until {}", format_ms(f), format_ms(u)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(time_ms("t", &Value::from(5)).unwrap(), 5);
        assert_eq!(time_ms("t", &Value::from("2024-06-01")).unwrap(), 1_717_200_000_000);
        let e = time_ms("valid_until", &Value::from("June")).unwrap_err();
        assert!(e.to_string().contains("`valid_until`"), "{e}");
        assert!(time_ms("t", &Value::from(1.5)).is_err());
        assert_eq!(format_ms(1_717_200_000_000), "2024-06-01T00:00:00Z");
    }
}
