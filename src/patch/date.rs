//! Mail dates read as `git am` reads them (git's "basic" date parser, which `git commit` and
//! `git am` use for `GIT_AUTHOR_DATE`): RFC 2822, ISO 8601 and the looser forms git accepts,
//! timezone names included (`PDT` is -0700), and a refusal where git refuses
//! (`invalid date format`) instead of a made-up date.
//!
//! The result is what git writes into the commit: seconds since the epoch and the offset in
//! minutes. A date that names no offset takes the local one, as git does.

use chrono::{Datelike as _, Offset as _, TimeZone as _, Timelike as _};

/// Month names as git matches them: any prefix of three letters or more.
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Weekday names, matched the same way; they set nothing git uses.
const WEEKDAYS: [&str; 7] = [
    "Sundays",
    "Mondays",
    "Tuesdays",
    "Wednesdays",
    "Thursdays",
    "Fridays",
    "Saturdays",
];

/// Timezone names git knows: name, hours east of UTC, and whether it is a summer time (which
/// adds an hour).
const ZONES: &[(&str, i32, i32)] = &[
    ("IDLW", -12, 0),
    ("NT", -11, 0),
    ("CAT", -10, 0),
    ("HST", -10, 0),
    ("HDT", -10, 1),
    ("YST", -9, 0),
    ("YDT", -9, 1),
    ("PST", -8, 0),
    ("PDT", -8, 1),
    ("MST", -7, 0),
    ("MDT", -7, 1),
    ("CST", -6, 0),
    ("CDT", -6, 1),
    ("EST", -5, 0),
    ("EDT", -5, 1),
    ("AST", -3, 0),
    ("ADT", -3, 1),
    ("WAT", -1, 0),
    ("GMT", 0, 0),
    ("UTC", 0, 0),
    ("Z", 0, 0),
    ("WET", 0, 0),
    ("BST", 0, 1),
    ("CET", 1, 0),
    ("MET", 1, 0),
    ("MEWT", 1, 0),
    ("MEST", 1, 1),
    ("CEST", 1, 1),
    ("MESZ", 1, 1),
    ("FWT", 1, 0),
    ("FST", 1, 1),
    ("EET", 2, 0),
    ("EEST", 2, 1),
    ("WAST", 7, 0),
    ("WADT", 7, 1),
    ("CCT", 8, 0),
    ("JST", 9, 0),
    ("EAST", 10, 0),
    ("EADT", 10, 1),
    ("GST", 10, 0),
    ("NZT", 12, 0),
    ("NZST", 12, 0),
    ("NZDT", 12, 1),
    ("IDLE", 12, 0),
];

/// The latest instant git accepts: 2099-12-31T23:59:59Z.
const TIMESTAMP_MAX: i64 = ((2100 - 1970) * 365 + 32) * 24 * 60 * 60 - 1;

/// A broken-down time with git's "not seen yet" marker (-1) in every field.
#[derive(Debug, Clone, Copy)]
struct Tm {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
}

impl Tm {
    fn unknown() -> Self {
        Tm {
            year: -1,
            month: -1,
            day: -1,
            hour: -1,
            minute: -1,
            second: -1,
        }
    }

    /// No field set yet.
    fn nothing_set(&self) -> bool {
        [
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
        ]
        .iter()
        .all(|field| *field < 0)
    }

    fn date_known(&self) -> bool {
        self.year != -1 && self.month != -1 && self.day != -1
    }

    /// Seconds since the epoch, reading the fields as UTC; `None` outside 1970-2099 or when a
    /// field is missing.
    fn to_epoch(self) -> Option<i64> {
        const DAYS_BEFORE: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
        let year = self.year - 70;
        if !(0..=129).contains(&year) || !(0..=11).contains(&self.month) {
            return None;
        }
        let mut day = self.day;
        if self.month < 2 || (year + 2) % 4 != 0 {
            day -= 1;
        }
        if self.hour < 0 || self.minute < 0 || self.second < 0 {
            return None;
        }
        Some(
            (year * 365 + (year + 1) / 4 + DAYS_BEFORE[self.month as usize] + day) * 86_400
                + self.hour * 3600
                + self.minute * 60
                + self.second,
        )
    }
}

/// Why a date was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid date format: {0}")]
pub struct InvalidDate(pub String);

impl crate::diagnostics::Advise for InvalidDate {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Nothing(
            "read while a patch is read; `PatchError` says which patch and what to do",
        )
    }
}

crate::advised!(InvalidDate);

/// Parses `text` as git does: seconds since the epoch and the UTC offset in minutes.
pub fn parse(text: &str) -> Result<(i64, i32), InvalidDate> {
    parse_at(text, chrono::Utc::now().timestamp())
}

/// `parse`, with "now" given (git refuses some month/day orders that would lie more than ten
/// days in the future).
pub fn parse_at(text: &str, now: i64) -> Result<(i64, i32), InvalidDate> {
    let invalid = || InvalidDate(text.to_owned());
    let bytes = text.as_bytes();
    if let Some(rest) = bytes.strip_prefix(b"@")
        && let Some(parsed) = object_header_date(rest)
    {
        return Ok(parsed);
    }
    let mut tm = Tm::unknown();
    let mut offset: Option<i32> = None;
    let mut gmt = false;
    let mut at = 0;
    while at < bytes.len() {
        let c = bytes[at];
        if c == b'\n' {
            break;
        }
        let rest = &bytes[at..];
        let consumed = if c.is_ascii_alphabetic() {
            match_alpha(rest, &mut tm, &mut offset)
        } else if c.is_ascii_digit() {
            match_digit(rest, &mut tm, &mut offset, &mut gmt, now)
        } else if (c == b'-' || c == b'+') && rest.get(1).is_some_and(u8::is_ascii_digit) {
            match_zone(rest, &mut offset)
        } else {
            0
        };
        at += consumed.max(1);
    }
    let mut timestamp = tm.to_epoch().ok_or_else(invalid)?;
    let offset = match offset {
        Some(offset) => offset,
        None => local_offset_minutes(timestamp),
    };
    if !gmt {
        let shift = i64::from(offset) * 60;
        if offset > 0 && shift > timestamp {
            return Err(invalid());
        }
        if offset < 0 && -shift > TIMESTAMP_MAX - timestamp {
            return Err(invalid());
        }
        timestamp -= shift;
    }
    Ok((timestamp, offset))
}

/// `1234567890 +0200` after an `@`, as git writes dates into objects.
fn object_header_date(rest: &[u8]) -> Option<(i64, i32)> {
    let text = std::str::from_utf8(rest).ok()?;
    let text = text.strip_suffix('\n').unwrap_or(text);
    let (stamp, zone) = text.split_once(' ')?;
    if stamp.is_empty() || !stamp.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (sign, digits) = zone.split_at_checked(1)?;
    if !matches!(sign, "+" | "-")
        || digits.len() != 4
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let value: i32 = digits.parse().ok()?;
    let minutes = (value / 100) * 60 + value % 100;
    Some((
        stamp.parse().ok()?,
        if sign.starts_with('-') {
            -minutes
        } else {
            minutes
        },
    ))
}

/// How many leading characters of `date` match `name`, case-insensitively, stopping at the
/// first character of `date` that is not a letter or digit; 0 when a letter differs.
fn match_string(date: &[u8], name: &str) -> usize {
    let name = name.as_bytes();
    let mut count = 0;
    for (index, &c) in date.iter().enumerate() {
        let expected = name.get(index).copied().unwrap_or(0);
        if c.eq_ignore_ascii_case(&expected) {
            count += 1;
            continue;
        }
        if !c.is_ascii_alphanumeric() {
            break;
        }
        return 0;
    }
    count
}

/// A month, weekday or timezone name, `AM`/`PM`, or ISO 8601's `T`; anything else is skipped
/// as a word.
fn match_alpha(date: &[u8], tm: &mut Tm, offset: &mut Option<i32>) -> usize {
    for (index, name) in MONTHS.iter().enumerate() {
        let matched = match_string(date, name);
        if matched >= 3 {
            tm.month = index as i64;
            return matched;
        }
    }
    for name in WEEKDAYS {
        let matched = match_string(date, name);
        if matched >= 3 {
            return matched;
        }
    }
    for (name, hours, summer) in ZONES {
        let matched = match_string(date, name);
        if matched >= 3 || matched == name.len() {
            if offset.is_none() {
                *offset = Some(60 * (hours + summer));
            }
            return matched;
        }
    }
    if match_string(date, "PM") == 2 {
        tm.hour = (tm.hour % 12) + 12;
        return 2;
    }
    if match_string(date, "AM") == 2 {
        tm.hour %= 12;
        return 2;
    }
    if date[0] == b'T' && date.get(1).is_some_and(u8::is_ascii_digit) && tm.hour == -1 {
        tm.minute = 0;
        tm.second = 0;
        return 1;
    }
    1 + date[1..]
        .iter()
        .take_while(|c| c.is_ascii_alphabetic())
        .count()
}

/// A leading run of decimal digits: its value (saturating) and length.
fn number(text: &[u8]) -> (i64, usize) {
    let digits = text.iter().take_while(|c| c.is_ascii_digit()).count();
    let value = text[..digits].iter().fold(0i64, |value, &digit| {
        value
            .saturating_mul(10)
            .saturating_add(i64::from(digit - b'0'))
    });
    (value, digits)
}

/// Sets month and day (and the year) when they make a date. Without `refuse_future` the fields
/// are written straight into `tm`, even on the way to a refusal, as git does; with it they are
/// checked first and a date more than ten days after "now" is refused.
fn set_date(year: i64, month: i64, day: i64, refuse_future: Option<i64>, tm: &mut Tm) -> bool {
    if !(month > 0 && month < 13 && day > 0 && day < 32) {
        return false;
    }
    let mut candidate = *tm;
    candidate.month = month - 1;
    candidate.day = day;
    let accepted = 'check: {
        if year == -1 {
            match refuse_future {
                None => break 'check false,
                Some(now) => {
                    candidate.year = chrono::DateTime::from_timestamp(now, 0)
                        .map_or(70, |now| i64::from(now.year()) - 1900);
                }
            }
        } else if (1970..2100).contains(&year) {
            candidate.year = year - 1900;
        } else if year > 70 && year < 100 {
            candidate.year = year;
        } else if year < 38 {
            candidate.year = year + 100;
        } else {
            break 'check false;
        }
        match refuse_future {
            Some(now) => candidate
                .to_epoch()
                .is_none_or(|specified| now + 10 * 86_400 >= specified),
            None => true,
        }
    };
    match refuse_future {
        None => *tm = candidate,
        Some(_) if accepted => {
            tm.month = candidate.month;
            tm.day = candidate.day;
            if year != -1 {
                tm.year = candidate.year;
            }
        }
        Some(_) => {}
    }
    accepted
}

fn set_time(hour: i64, minute: i64, second: i64, tm: &mut Tm) -> bool {
    if (0..=24).contains(&hour) && (0..60).contains(&minute) && (0..=60).contains(&second) {
        tm.hour = hour;
        tm.minute = minute;
        tm.second = second;
        return true;
    }
    false
}

/// `num<c>num[<c>num]`: a time (`:`) or a date (`-`, `/`, `.`) in one of the orders git tries.
fn match_multi_number(first: i64, c: u8, date: &[u8], end: usize, tm: &mut Tm, now: i64) -> usize {
    let mut at = end + 1;
    let (second, length) = number(&date[at..]);
    at += length;
    let mut third = -1;
    if date.get(at) == Some(&c) && date.get(at + 1).is_some_and(u8::is_ascii_digit) {
        let (value, length) = number(&date[at + 1..]);
        third = value;
        at += 1 + length;
    }
    match c {
        b':' => {
            if !set_time(first, second, third.max(0), tm) {
                return 0;
            }
            if date.get(at) == Some(&b'.')
                && date.get(at + 1).is_some_and(u8::is_ascii_digit)
                && tm.date_known()
            {
                at += 1 + number(&date[at + 1..]).1;
            }
        }
        _ => {
            let future = Some(now);
            let matched = (first > 70
                && (set_date(first, second, third, None, tm)
                    || set_date(first, third, second, None, tm)))
                || (c != b'.' && set_date(third, first, second, future, tm))
                || set_date(third, second, first, future, tm)
                || (c == b'.' && set_date(third, first, second, future, tm));
            if !matched {
                return 0;
            }
        }
    }
    at
}

/// A number: seconds since 1970, a time, a date, a year, a zone or a day, guessed the way git
/// guesses.
fn match_digit(
    date: &[u8],
    tm: &mut Tm,
    offset: &mut Option<i32>,
    gmt: &mut bool,
    now: i64,
) -> usize {
    let (value, digits) = number(date);
    let end = digits;
    if value >= 100_000_000
        && tm.nothing_set()
        && let Some(time) = chrono::DateTime::from_timestamp(value, 0)
    {
        tm.year = i64::from(time.year()) - 1900;
        tm.month = i64::from(time.month0());
        tm.day = i64::from(time.day());
        tm.hour = i64::from(time.hour());
        tm.minute = i64::from(time.minute());
        tm.second = i64::from(time.second());
        *gmt = true;
        return end;
    }
    if let Some(&separator @ (b':' | b'.' | b'/' | b'-')) = date.get(end)
        && date.get(end + 1).is_some_and(u8::is_ascii_digit)
    {
        let matched = match_multi_number(value, separator, date, end, tm, now);
        if matched > 0 {
            return matched;
        }
    }
    if digits == 8 || digits == 6 {
        let (a, b, c) = (value / 10000, (value % 10000) / 100, value % 100);
        let mut end = end;
        if digits == 8 {
            set_date(a, b, c, None, tm);
        } else if set_time(a, b, c, tm)
            && date.get(end) == Some(&b'.')
            && date.get(end + 1).is_some_and(u8::is_ascii_digit)
        {
            end += 1 + number(&date[end + 1..]).1;
        }
        return end;
    }
    if tm.hour == -1 && tm.minute == 0 && tm.second == 0 {
        let (hour, minute) = if digits == 4 {
            (value / 100, value % 100)
        } else {
            (value, 0)
        };
        if (digits == 4 || digits == 2) && !tm.nothing_set() && set_time(hour, minute, 0, tm) {
            return digits;
        }
        tm.minute = -1;
        tm.second = -1;
    }
    if digits == 4 {
        if value <= 1400 && offset.is_none() {
            *offset = Some(((value / 100) * 60 + value % 100) as i32);
        } else if value > 1900 && value < 2100 {
            tm.year = value - 1900;
        }
        return digits;
    }
    if digits > 2 {
        return digits;
    }
    if value > 0 && value < 32 && tm.day < 0 {
        tm.day = value;
        return digits;
    }
    if digits == 2 && tm.year < 0 {
        if value < 10 && tm.day >= 0 {
            tm.year = value + 100;
            return digits;
        }
        if value >= 70 {
            tm.year = value;
            return digits;
        }
    }
    if value > 0 && value < 13 && tm.month < 0 {
        tm.month = value - 1;
    }
    digits
}

/// `+hhmm`, `-hh`, `+hh:mm`: an offset, taken only when it is sane.
fn match_zone(date: &[u8], offset: &mut Option<i32>) -> usize {
    let (mut hour, digits) = number(&date[1..]);
    let mut end = 1 + digits;
    let mut minute = 0;
    if digits == 4 {
        minute = hour % 100;
        hour /= 100;
    } else if digits != 2 {
        minute = 99;
    } else if date.get(end) == Some(&b':') {
        let (value, length) = number(&date[end + 1..]);
        minute = value;
        end += 1 + length;
        if end - 1 != 5 {
            minute = 99;
        }
    }
    if minute < 60 && hour < 24 {
        let total = (hour * 60 + minute) as i32;
        *offset = Some(if date[0] == b'-' { -total } else { total });
    }
    end
}

/// The local offset, in minutes, at the wall-clock time that `as_utc` spells in UTC (git asks
/// `mktime`).
fn local_offset_minutes(as_utc: i64) -> i32 {
    let Some(wall) = chrono::DateTime::from_timestamp(as_utc, 0) else {
        return 0;
    };
    match chrono::Local.from_local_datetime(&wall.naive_utc()) {
        chrono::LocalResult::Single(local) | chrono::LocalResult::Ambiguous(local, _) => {
            local.offset().fix().local_minus_utc() / 60
        }
        chrono::LocalResult::None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    #[test]
    fn reads_rfc_2822_dates_with_their_offsets() {
        assert_eq!(
            parse_at("Fri, 2 Jan 2026 03:04:05 +0530", NOW),
            Ok((1_767_303_245, 330))
        );
        assert_eq!(
            parse_at("Mon, 6 Jul 2026 14:12:09 -0700 (PDT)", NOW),
            Ok((1_783_372_329, -420))
        );
    }

    #[test]
    fn timezone_names_count_when_no_number_does() {
        assert_eq!(
            parse_at("Mon, 6 Jul 2026 14:12:09 PDT", NOW).map(|(_, offset)| offset),
            Ok(-420)
        );
        assert_eq!(
            parse_at("Mon, 6 Jul 2026 14:12:09 CEST", NOW).map(|(_, offset)| offset),
            Ok(120)
        );
    }

    #[test]
    fn refuses_what_git_refuses() {
        for text in [
            "yesterday",
            "",
            "Mon, 6 Jul 2026",
            "6 Jul 1960 10:00:00 +0000",
        ] {
            assert!(parse_at(text, NOW).is_err(), "{text:?} was accepted");
        }
    }

    #[test]
    fn reads_iso_and_raw_forms() {
        assert_eq!(
            parse_at("2026-07-06T14:12:09+02:00", NOW),
            Ok((1_783_339_929, 120))
        );
        assert_eq!(parse_at("@1783339929 +0200", NOW), Ok((1_783_339_929, 120)));
    }
}
