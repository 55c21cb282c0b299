//! Wall-clock times in UTC: the one calendar rule of perfplan. ISO-8601 / RFC 3339 text
//! read into Unix microseconds ([`parse_utc_us`]), and Unix seconds turned into a
//! proleptic Gregorian date and time ([`UtcTime`]) for every place that writes one: the
//! output folder's name, report and JUnit timestamps, a chat template's `strftime_now`.

/// Microseconds since the Unix epoch of an ISO-8601 / RFC 3339 time:
/// `2026-11-29T12:00:00Z`, with an optional fraction, `T` or a space between date and
/// time, and `Z`, an offset (`+01:00`) or no zone (UTC). `None` for anything else.
pub fn parse_utc_us(text: &str) -> Option<i128> {
    let b = text.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    // A day the month does not have (February 30th) is no date.
    let (cy, cm, cd) = civil_from_days(days_from_civil(y, mo, d));
    if (cy, i64::from(cm), i64::from(cd)) != (y, mo, d) {
        return None;
    }
    let mut rest = &text[19..];
    let mut frac_us = 0i64;
    if let Some(f) = rest.strip_prefix('.') {
        let digits = f.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded: String = f[..digits]
            .chars()
            .chain("000000".chars())
            .take(6)
            .collect();
        frac_us = padded.parse().ok()?;
        rest = &f[digits..];
    }
    let zone_s = match rest {
        "" | "Z" | "z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) && &z[3..4] == ":" => {
            let sign = if z.starts_with('-') { -1 } else { 1 };
            sign * (z[1..3].parse::<i64>().ok()? * 3600 + z[4..6].parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - zone_s;
    Some(i128::from(secs) * 1_000_000 + i128::from(frac_us))
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month 1..=12, day 1..=31) of a day count since 1970-01-01, proleptic Gregorian
/// (negative days are before 1970). The inverse of `days_from_civil`.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// A Unix time as a UTC calendar date and time of day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    /// 1..=12.
    pub month: u32,
    /// 1..=31.
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// 0 = Monday … 6 = Sunday.
    pub weekday: u32,
}

impl UtcTime {
    /// The UTC time of `secs` seconds since 1970-01-01T00:00:00Z (negative: before).
    pub(crate) fn of_unix_secs(secs: i64) -> UtcTime {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        UtcTime {
            year,
            month,
            day,
            hour: rem / 3600,
            minute: rem / 60 % 60,
            second: rem % 60,
            // 1970-01-01 was a Thursday.
            weekday: (days + 3).rem_euclid(7) as u32,
        }
    }

    /// The UTC time of `ms` milliseconds since the epoch, to the whole second below.
    pub(crate) fn of_unix_ms(ms: i64) -> UtcTime {
        UtcTime::of_unix_secs(ms.div_euclid(1000))
    }

    /// `2026-11-29T08:56:05Z` (RFC 3339).
    pub(crate) fn rfc3339(&self) -> String {
        format!("{}T{}Z", self.date(), self.time())
    }

    /// `2026-11-29`.
    pub fn date(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }

    /// `08:56:05`.
    pub fn time(&self) -> String {
        format!("{:02}:{:02}:{:02}", self.hour, self.minute, self.second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times_from_iso_text() {
        assert_eq!(parse_utc_us("1970-01-01T00:00:01.5Z"), Some(1_500_000));
        assert_eq!(parse_utc_us("1970-01-01 01:00:00+01:00"), Some(0));
        assert_eq!(
            parse_utc_us("2026-11-29t12:00:00z"),
            Some(1_795_953_600_000_000)
        );
        for bad in [
            "2026-13-01T00:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T12:00Z",
            "2026-11-29T12:00:00.Z",
            "2026-11-29T12:00:00+0100",
            "2026-11-29T12-00-00Z",
            "+026-11-29T12:00:00Z",
        ] {
            assert_eq!(parse_utc_us(bad), None, "{bad}");
        }
    }

    #[test]
    fn unix_times_become_utc_dates_at_the_edges() {
        let at = |secs: i64| UtcTime::of_unix_secs(secs).rfc3339();
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(-1), "1969-12-31T23:59:59Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z"); // a leap day of a 400th year
        assert_eq!(at(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(at(-2_203_891_200), "1900-03-01T00:00:00Z"); // 1900 has no 29 February
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z"); // nor has 2100
        assert_eq!(at(1_795_938_471), "2026-11-29T07:47:51Z");
        assert_eq!(at(253_402_300_799), "9999-12-31T23:59:59Z");
        assert_eq!(at(-62_135_596_800), "0001-01-01T00:00:00Z");
        assert_eq!(UtcTime::of_unix_ms(-1).rfc3339(), "1969-12-31T23:59:59Z");
        assert_eq!(UtcTime::of_unix_ms(1_999).second, 1);
    }

    #[test]
    fn weekdays_count_from_a_thursday() {
        assert_eq!(UtcTime::of_unix_secs(0).weekday, 3);
        assert_eq!(UtcTime::of_unix_secs(-86_400).weekday, 2);
        assert_eq!(UtcTime::of_unix_secs(951_782_400).weekday, 1); // 2000-02-29, a Tuesday
    }

    #[test]
    fn civil_dates_round_trip_through_day_counts() {
        for days in (-800_000..800_000).step_by(997).chain(-2..3) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(
                days_from_civil(y, i64::from(m), i64::from(d)),
                days,
                "{y}-{m}-{d}"
            );
        }
        let parsed = parse_utc_us(&UtcTime::of_unix_secs(4_107_542_399).rfc3339());
        assert_eq!(parsed, Some(4_107_542_399_000_000));
    }
}
