//! Dates read from node texts (`cairn_index::dates`): a table of phrasings, the numbers
//! that must be left alone, and the same spans in another process.

use cairn_index::dates::{days_from_civil, find_dates, text_dates, DateMode, DaySpan, MAX_TEXT_DATES};

fn d(y: i64, m: u32, day: u32) -> i32 {
    days_from_civil(y, m, day) as i32
}

fn years(a: i64, b: i64) -> DaySpan {
    DaySpan {
        start: d(a, 1, 1),
        end: d(b + 1, 1, 1),
    }
}

fn month(y: i64, m: u32) -> DaySpan {
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    DaySpan {
        start: d(y, m, 1),
        end: d(ny, nm, 1),
    }
}

fn day(y: i64, m: u32, dd: u32) -> DaySpan {
    DaySpan {
        start: d(y, m, dd),
        end: d(y, m, dd) + 1,
    }
}

/// `(text, [(as written, span)])` in text order.
fn table() -> Vec<(&'static str, Vec<(&'static str, DaySpan)>)> {
    vec![
        // Years in context.
        ("Built in 1794, it was a house.", vec![("1794", years(1794, 1794))]),
        ("He served until 1920 as mayor", vec![("1920", years(1920, 1920))]),
        ("Since 2003 she has lived there", vec![("2003", years(2003, 2003))]),
        ("during 1916 he was in France", vec![("1916", years(1916, 1916))]),
        (
            "It closed in early 1995 after a fire",
            vec![("1995", years(1995, 1995))],
        ),
        ("the summer of 1969 was long", vec![("1969", years(1969, 1969))]),
        ("a record set in 2019.", vec![("2019", years(2019, 2019))]),
        ("Newton Baker (1871) was", vec![("1871", years(1871, 1871))]),
        ("The last election was 2012", vec![("2012", years(2012, 2012))]),
        ("c. 1450 the town grew", vec![("1450", years(1450, 1450))]),
        // Ranges.
        (
            "Secretary of War during 1916-1920 while",
            vec![("1916-1920", years(1916, 1920))],
        ),
        (
            "He played from 1990 to 1995 for them",
            vec![("1990 to 1995", years(1990, 1995))],
        ),
        (
            "between 1972 and 1976 she taught",
            vec![("1972 and 1976", years(1972, 1976))],
        ),
        ("Baker (1871–1937) was a lawyer", vec![("1871–1937", years(1871, 1937))]),
        ("the 1916–20 term", vec![("1916–20", years(1916, 1920))]),
        ("1998 – 2003 at Leeds", vec![("1998 – 2003", years(1998, 2003))]),
        (
            "from 1975 until 1980, then",
            vec![("1975 until 1980", years(1975, 1980))],
        ),
        (
            "from May 2019 to June 2020 he",
            vec![(
                "May 2019 to June 2020",
                DaySpan {
                    start: d(2019, 5, 1),
                    end: d(2020, 7, 1),
                },
            )],
        ),
        // Months and days.
        ("In July 2023 the club moved", vec![("July 2023", month(2023, 7))]),
        ("Sept 2021 saw a merger", vec![("Sept 2021", month(2021, 9))]),
        ("signed on May 4, 2023 in Paris", vec![("May 4, 2023", day(2023, 5, 4))]),
        ("on May 4th 2023", vec![("May 4th 2023", day(2023, 5, 4))]),
        ("born 4 May 1923 in Leeds", vec![("4 May 1923", day(1923, 5, 4))]),
        ("released 2021-05-04 worldwide", vec![("2021-05-04", day(2021, 5, 4))]),
        (
            "29 February 2024 was a Thursday",
            vec![("29 February 2024", day(2024, 2, 29))],
        ),
        // Decades and centuries.
        ("music of the 1990s was loud", vec![("1990s", years(1990, 1999))]),
        ("in the 1960's it grew", vec![("1960's", years(1960, 1969))]),
        ("houses of the 1800s", vec![("1800s", years(1800, 1899))]),
        // Several in one text, in order.
        (
            "Born in 1901, he died on 3 June 1950.",
            vec![("1901", years(1901, 1901)), ("3 June 1950", day(1950, 6, 3))],
        ),
        // Numbers that are not years, left alone.
        ("an army of 1500 men marched", vec![]),
        ("the 1950 wing tests", vec![]),
        ("at 3017 N Street NW", vec![]),
        ("a value of 2019.5 was", vec![]),
        ("2,019 votes were cast", vec![]),
        ("it cost $1999 then", vec![]),
        ("a rise of 1999% overall", vec![]),
        ("room 1204 is on the left", vec![]),
        ("in 850 the abbey", vec![]),
        ("in 1200 BC the city", vec![]),
        ("you may go", vec![]),
        ("on 2023-02-30 nothing", vec![]),
        ("1080p and 4096 pixels", vec![]),
        // Relative words are not read in a text.
        ("yesterday we met last May", vec![]),
    ]
}

#[test]
fn phrasings_table() {
    let rows = table();
    assert!(rows.len() >= 30);
    for (text, want) in rows {
        let got: Vec<(&str, DaySpan)> = find_dates(text, DateMode::Text)
            .into_iter()
            .map(|m| (&text[m.start..m.end], m.span))
            .collect();
        assert_eq!(got, want, "{text:?}");
    }
}

#[test]
fn stored_spans_are_sorted_deduplicated_and_capped() {
    let spans = text_dates("In 1950 and in 1940, and again in 1950.");
    assert_eq!(spans, vec![years(1940, 1940), years(1950, 1950)]);
    let many: String = (1000..1200).map(|y| format!("in {y}, ")).collect();
    let spans = text_dates(&many);
    assert_eq!(spans.len(), MAX_TEXT_DATES);
    assert_eq!(
        spans[MAX_TEXT_DATES - 1],
        years(1063, 1063),
        "the first ones written are kept"
    );
    assert!(text_dates("").is_empty());
}

/// The same spans in a child process (the extraction reads no clock, locale or state).
#[test]
fn same_spans_in_another_process() {
    let render = || -> String { table().iter().map(|(t, _)| format!("{:?}\n", text_dates(t))).collect() };
    if std::env::var_os("CAIRN_TEXT_DATES_CHILD").is_some() {
        print!("{}", render());
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "same_spans_in_another_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CAIRN_TEXT_DATES_CHILD", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains(&render()), "child printed:\n{stdout}");
}
