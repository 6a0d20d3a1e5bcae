//! The two date formats a signed request can carry, as Unix seconds (UTC):
//! `X-Amz-Date: 20240101T000000Z` (ISO 8601 basic) and `Date: Mon, 01 Jan 2024 00:00:00 GMT`
//! (HTTP's IMF-fixdate). Hand-written to avoid a calendar dependency for two fixed formats.

use shoal_model::calendar::{civil_from_days, days_from_civil};

/// Parses `YYYYMMDDTHHMMSSZ`; `None` for anything else (including impossible dates).
pub fn parse_amz_date(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() != 16 || bytes[8] != b'T' || bytes[15] != b'Z' {
        return None;
    }
    let year = digits(&text[0..4])?;
    let month = digits(&text[4..6])?;
    let day = digits(&text[6..8])?;
    let hour = digits(&text[9..11])?;
    let minute = digits(&text[11..13])?;
    let second = digits(&text[13..15])?;
    unix_seconds(year, month, day, hour, minute, second)
}

/// Formats Unix seconds as `YYYYMMDDTHHMMSSZ`.
pub fn format_amz_date(unix_seconds: i64) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let second_of_day = unix_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

/// Parses an IMF-fixdate such as `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn parse_http_date(text: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let parts: Vec<&str> = text.split(' ').collect();
    let [_weekday, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let month_index = MONTHS.iter().position(|name| name == month)?;
    let time_parts: Vec<&str> = time.split(':').collect();
    let [hour, minute, second] = time_parts.as_slice() else {
        return None;
    };
    if day.len() != 2
        || year.len() != 4
        || hour.len() != 2
        || minute.len() != 2
        || second.len() != 2
    {
        return None;
    }
    unix_seconds(
        digits(year)?,
        month_index as i64 + 1,
        digits(day)?,
        digits(hour)?,
        digits(minute)?,
        digits(second)?,
    )
}

fn digits(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn unix_seconds(
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
) -> Option<i64> {
    // 60 allows a leap second, which some clocks emit.
    if !(1..=12).contains(&month) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    if day < 1 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_dates() {
        assert_eq!(parse_amz_date("19700101T000000Z"), Some(0));
        assert_eq!(parse_amz_date("20150830T123600Z"), Some(1_440_938_160));
        assert_eq!(parse_amz_date("20240229T235959Z"), Some(1_709_251_199));
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(format_amz_date(1_440_938_160), "20150830T123600Z");
    }

    #[test]
    fn rejects_malformed_and_impossible_dates() {
        for text in [
            "",
            "20150830T123600",
            "20150830 123600Z",
            "2015083OT123600Z",
            "20230229T000000Z",
            "20151301T000000Z",
            "20150830T246000Z",
            "+0150830T123600Z",
        ] {
            assert_eq!(parse_amz_date(text), None, "{text:?}");
        }
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 UTC"), None);
        assert_eq!(parse_http_date("Sun, 6 Nov 1994 08:49:37 GMT"), None);
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(unix_seconds in 0i64..253_402_300_799) {
            prop_assert_eq!(parse_amz_date(&format_amz_date(unix_seconds)), Some(unix_seconds));
        }
    }
}
