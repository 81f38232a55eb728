//! The query planner: time-expression parsing (a table, with the non-matches), the rule
//! planner's soft time boost on a small in-memory commit (direction, softness,
//! determinism, reporting, switching off), and a user planner plugged in.

mod common;

use cairn_core::{Node, Validity};
use cairn_retrieve::time_expr::find_time_expressions;
use cairn_retrieve::{
    execute_spec, PlanError, PlanRequest, PlannerMode, Plugins, QueryPlan, QueryPlanner, ResolvedCommit, Retrieval,
    RetrievalResult, RetrieveSpec, RulePlanner, SoftBoost, TimeWindow, WarningCode,
};
use common::{id, resolved, FakeSource};

const DAY: i64 = 86_400_000;
/// 2024-06-15T12:00:00Z, a Saturday.
const REF: i64 = 1_718_452_800_000;

/// Days since the epoch of a date (test-side, by counting from 1970 with the calendar).
fn ymd(y: i64, m: u32, d: u32) -> i64 {
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_len = |y: i64, m: u32| match m {
        2 if leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    let mut days = 0;
    for yy in 1970..y {
        days += if leap(yy) { 366 } else { 365 };
    }
    for yy in y..1970 {
        days -= if leap(yy) { 366 } else { 365 };
    }
    for mm in 1..m {
        days += month_len(y, mm);
    }
    (days + i64::from(d) - 1) * DAY
}

fn window(start: i64, end: i64) -> TimeWindow {
    TimeWindow {
        start_ms: start,
        end_ms: end,
    }
}

#[test]
fn time_expressions_table() {
    let day = |y, m, d| window(ymd(y, m, d), ymd(y, m, d) + DAY);
    let month = |y, m| {
        let next = if m == 12 { ymd(y + 1, 1, 1) } else { ymd(y, m + 1, 1) };
        window(ymd(y, m, 1), next)
    };
    let year = |y| window(ymd(y, 1, 1), ymd(y + 1, 1, 1));
    let cases: Vec<(&str, Vec<(&str, TimeWindow)>)> = vec![
        ("what did I do in July 2023?", vec![("July 2023", month(2023, 7))]),
        ("where was I last May", vec![("last May", month(2024, 5))]),
        ("what happened in 2019", vec![("2019", year(2019))]),
        ("who won in 2019?", vec![("2019", year(2019))]),
        ("papers from 1962, on stall", vec![("1962", year(1962))]),
        ("the meeting on 2023-05-04", vec![("2023-05-04", day(2023, 5, 4))]),
        ("lunch May 4, 2023 with Ana", vec![("May 4, 2023", day(2023, 5, 4))]),
        ("on May 4th 2023", vec![("May 4th 2023", day(2023, 5, 4))]),
        ("4 May 2023", vec![("4 May 2023", day(2023, 5, 4))]),
        ("Sept 2021 trip", vec![("Sept 2021", month(2021, 9))]),
        ("what did we eat on June 20", vec![("on June 20", day(2023, 6, 20))]),
        ("on June 10", vec![("on June 10", day(2024, 6, 10))]),
        ("in May", vec![("in May", month(2024, 5))]),
        ("in December", vec![("in December", month(2023, 12))]),
        ("this June", vec![("this June", month(2024, 6))]),
        ("last June", vec![("last June", month(2023, 6))]),
        ("yesterday", vec![("yesterday", day(2024, 6, 14))]),
        ("what did I read today", vec![("today", day(2024, 6, 15))]),
        (
            "last week",
            vec![("last week", window(ymd(2024, 6, 3), ymd(2024, 6, 10)))],
        ),
        (
            "this week",
            vec![("this week", window(ymd(2024, 6, 10), ymd(2024, 6, 17)))],
        ),
        ("last month", vec![("last month", month(2024, 5))]),
        ("last year", vec![("last year", year(2023))]),
        ("this year", vec![("this year", year(2024))]),
        // Ranges are one window, from the first end's start to the second end's end.
        (
            "between 2019-2020",
            vec![("2019-2020", window(ymd(2019, 1, 1), ymd(2021, 1, 1)))],
        ),
        (
            "Who owned the house from 1811 to 1827?",
            vec![("1811 to 1827", window(ymd(1811, 1, 1), ymd(1828, 1, 1)))],
        ),
        (
            "who coached them from 1975 to Feb 2016",
            vec![("1975 to Feb 2016", window(ymd(1975, 1, 1), ymd(2016, 3, 1)))],
        ),
        (
            "between 1990 and 1995?",
            vec![("1990 and 1995", window(ymd(1990, 1, 1), ymd(1996, 1, 1)))],
        ),
        (
            "music of the 1990s",
            vec![("1990s", window(ymd(1990, 1, 1), ymd(2000, 1, 1)))],
        ),
        (
            "in July 2023 and on 2024-01-02",
            vec![("July 2023", month(2023, 7)), ("2024-01-02", day(2024, 1, 2))],
        ),
        // Not time expressions, on purpose (module docs of `time_expr`).
        ("2019 papers", vec![]),
        ("the 1950 wing tests", vec![]),
        ("mach 2019 flows", vec![]),
        ("a value of 2019.5", vec![]),
        ("you may go", vec![]),
        ("how do wings stall", vec![]),
        ("in 1850", vec![("1850", year(1850))]),
        ("in 850", vec![]),
        ("on 2023-02-30", vec![]),
        // No day 32: only the year at the clause end is left.
        ("May 32, 2023", vec![("2023", year(2023))]),
    ];
    for (query, want) in cases {
        let got: Vec<(String, TimeWindow)> = find_time_expressions(query, REF)
            .into_iter()
            .map(|e| (e.text, e.window))
            .collect();
        let want: Vec<(String, TimeWindow)> = want.into_iter().map(|(t, w)| (t.to_string(), w)).collect();
        assert_eq!(got, want, "{query:?}");
    }
}

#[test]
fn relative_expressions_follow_the_reference_never_the_clock() {
    // In May 2024, "last May" is May 2023; in January 2000, "last year" is 1999.
    let may = find_time_expressions("last May", ymd(2024, 5, 20));
    assert_eq!(may[0].window.start_ms, ymd(2023, 5, 1));
    let y = find_time_expressions("last year", ymd(2000, 1, 1));
    assert_eq!(y[0].window, window(ymd(1999, 1, 1), ymd(2000, 1, 1)));
    // Same input, same output (no clock, no state).
    assert_eq!(
        find_time_expressions("yesterday", REF),
        find_time_expressions("yesterday", REF)
    );
}

/// Four notes about a trip, valid in March 2023, always (no validity), in July 2023 and
/// on 2 August 2023. The text lane alone ties the first three (same text) and ranks the
/// August note, a longer text, last; ties go by id, so the July note comes third.
fn notes() -> ResolvedCommit {
    let note = |i: &str, text: &str, validity: Option<(i64, i64)>| {
        let mut n = Node::new(id(i)).with_label("Note").with_text(text);
        if let Some((from, until)) = validity {
            n = n.with_validity(Validity::new(Some(from), Some(until)));
        }
        n
    };
    let nodes = vec![
        note("n1-march", "Lisbon trip", Some((ymd(2023, 3, 2), ymd(2023, 3, 9)))),
        note("n2-open", "Lisbon trip", None),
        note("n4-july", "Lisbon trip", Some((ymd(2023, 7, 10), ymd(2023, 7, 17)))),
        note("n3-aug", "Lisbon trip notes", Some((ymd(2023, 8, 2), ymd(2023, 8, 3)))),
    ];
    resolved("notes", REF, nodes, &[])
}

fn ask(commit: &ResolvedCommit, json: &str) -> RetrievalResult {
    execute_spec(commit, &RetrieveSpec::from_json(json).unwrap(), &Plugins::default()).unwrap()
}

fn order(r: &RetrievalResult) -> Vec<&str> {
    r.items.iter().map(|i| i.id.as_str()).collect()
}

#[test]
fn time_boost_lifts_items_valid_in_the_window() {
    let commit = notes();
    let plain = ask(
        &commit,
        r#"{"text": "when did I go on the Lisbon trip in July 2023?", "valid_at": "all_time", "planner": "none"}"#,
    );
    let planned = ask(
        &commit,
        r#"{"text": "when did I go on the Lisbon trip in July 2023?", "valid_at": "all_time", "explain": true}"#,
    );
    assert_eq!(plain.plan, None);
    let p = planned.plan.as_ref().expect("the time expression is reported");
    assert_eq!(p.planner, "rule");
    assert_eq!(
        p.boosted, 3,
        "every item with validity gains; the unbounded one does not"
    );
    match &p.plan.boosts[..] {
        [SoftBoost::ValidityOverlap {
            expression, window: w, ..
        }, SoftBoost::TextDates {
            expression: e2,
            window: w2,
            weight,
        }] => {
            assert_eq!(expression, "July 2023");
            assert_eq!(*w, window(ymd(2023, 7, 1), ymd(2023, 8, 1)));
            assert_eq!((e2, w2), (expression, w));
            assert_eq!(*weight, 0.2, "a short question gets the full text-date boost");
        }
        other => panic!("{other:?}"),
    }
    let pos = |r: &RetrievalResult, id: &str| order(r).iter().position(|x| *x == id).unwrap();
    // The July note moves up, the unbounded note gains nothing, and nothing leaves.
    assert!(
        pos(&planned, "n4-july") < pos(&plain, "n4-july"),
        "{:?} vs {:?}",
        order(&planned),
        order(&plain)
    );
    assert_eq!(pos(&planned, "n4-july"), 0);
    assert_eq!(planned.items.len(), plain.items.len());
    // Soft: the August note (2 days past the window) gains, less than the July one.
    let boost = |id: &str| {
        planned.items[pos(&planned, id)]
            .explain
            .as_ref()
            .unwrap()
            .terms
            .iter()
            .find(|t| t.lane == "boost:time")
            .map_or(0.0, |t| t.contribution)
    };
    assert_eq!(boost("n4-july"), 0.1, "full strength: 0.1 of the score scale's top (1)");
    assert!(boost("n3-aug") > 0.0 && boost("n3-aug") < boost("n4-july"));
    assert!(boost("n1-march") > 0.0 && boost("n1-march") < boost("n3-aug"));
    assert_eq!(boost("n2-open"), 0.0);
    // The boost is a term of the score: terms sum to the item's score.
    for item in &planned.items {
        let sum: f64 = item
            .explain
            .as_ref()
            .unwrap()
            .terms
            .iter()
            .map(|t| t.contribution)
            .sum();
        assert!((sum - item.score).abs() < 1e-12, "{}", item.id);
    }
    // A query without a time expression plans nothing and reports nothing.
    let none = ask(&commit, r#"{"text": "Lisbon trip", "valid_at": "all_time"}"#);
    assert_eq!(none.plan, None);
}

/// Notes without validity whose texts name dates: the text-date boost lifts the ones
/// whose dates fall in the question's window, by how much of each date is inside it.
#[test]
fn text_date_boost_lifts_notes_whose_text_names_the_window() {
    let nodes = [
        ("a-plain", "Lisbon trip with Ana"),
        ("b-1999", "Lisbon trip with Ana, March 1999"),
        ("c-2020s", "Lisbon trip with Ana in the 2020s"),
        ("d-july", "Lisbon trip with Ana, July 2023"),
    ];
    // One vector for every note, and the text lane weighted 0: the lanes tie them all,
    // so the boosts alone order them.
    let nodes = nodes
        .into_iter()
        .map(|(i, t)| {
            Node::new(id(i))
                .with_label("Note")
                .with_text(t)
                .with_embedding("m", vec![1.0, 0.0])
        })
        .collect();
    let commit = resolved("dated", REF, nodes, &[]);
    let q = r#""text": "Lisbon trip with Ana between 2022 and 2024", "explain": true,
        "vector": {"model": "m", "embedding": [1, 0]}, "fusion": {"weights": {"text": 0}}"#;
    let planned = ask(&commit, &format!("{{{q}}}"));
    let plain = ask(&commit, &format!(r#"{{{q}, "planner": "none"}}"#));
    let boost = |id: &str| {
        let item = planned.items.iter().find(|i| i.id.as_str() == id).unwrap();
        item.explain
            .as_ref()
            .unwrap()
            .terms
            .iter()
            .find(|t| t.lane == "boost:text_date")
            .map_or(0.0, |t| t.contribution)
    };
    // July 2023 lies inside 2022–2024: full strength, 0.2 of the scale's top.
    assert_eq!(boost("d-july"), 0.2);
    // The 2020s: three of its ten years inside.
    assert!((boost("c-2020s") - 0.2 * 0.3).abs() < 0.01, "{}", boost("c-2020s"));
    // March 1999: 23 years before the window, next to nothing.
    assert!(boost("b-1999") > 0.0 && boost("b-1999") < 1e-6);
    assert_eq!(boost("a-plain"), 0.0);
    for i in &planned.items {
        eprintln!("{} {} {:?}", i.id.as_str(), i.score, i.explain.as_ref().unwrap().terms);
    }
    assert_eq!(order(&planned), ["d-july", "c-2020s", "a-plain", "b-1999"]);
    assert_ne!(
        order(&plain),
        order(&planned),
        "without the planner the dates change nothing"
    );
    // A long query (over TEXT_DATE_FULL_WORDS words) gets a smaller text-date boost.
    let long = format!("{} between 2022 and 2024", "Lisbon trip with Ana ".repeat(11));
    let plan = RulePlanner::default()
        .plan(&PlanRequest {
            text: Some(&long),
            reference_ms: REF,
            lanes: &[],
        })
        .unwrap();
    match &plan.boosts[1] {
        SoftBoost::TextDates { weight, .. } => assert!((*weight - 0.2 * 24.0 / 48.0).abs() < 1e-12, "{weight}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn time_boost_is_relative_to_the_validity_time_and_deterministic() {
    let commit = notes();
    // "last July" from 2024-06-15 (the commit's time) is July 2023.
    let json = r#"{"text": "Lisbon trip last July", "valid_at": "all_time"}"#;
    let a = ask(&commit, json);
    assert_eq!(order(&a)[0], "n4-july");
    let b = ask(&commit, json);
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    // With valid_at set, "last July" is relative to it: from 2023-06-15 it is July 2022,
    // and the validity gate at that time admits none of the notes with validity.
    let earlier = ask(
        &commit,
        &format!(
            r#"{{"text": "Lisbon trip last July", "valid_at": {}}}"#,
            ymd(2023, 6, 15)
        ),
    );
    let p = earlier.plan.as_ref().unwrap();
    assert!(matches!(&p.plan.boosts[0], SoftBoost::ValidityOverlap { window: w, .. } if w.start_ms == ymd(2022, 7, 1)));
}

#[test]
fn planner_can_be_switched_off_and_replaced() {
    let commit = notes();
    let src = FakeSource {
        commits: [("notes".to_string(), commit.clone())].into(),
        head: "notes".into(),
    };
    let off = Retrieval::new(&src)
        .text("Lisbon trip in July 2023")
        .all_time()
        .no_planner()
        .execute()
        .unwrap();
    assert_eq!(off.plan, None);
    assert_eq!(
        Retrieval::new(&src).no_planner().spec().planner,
        Some(PlannerMode::None)
    );

    /// Rewrites the text lane's query; fails on demand.
    struct Rewriter(bool);
    impl QueryPlanner for Rewriter {
        fn name(&self) -> &str {
            "rewriter"
        }
        fn plan(&self, request: &PlanRequest<'_>) -> Result<QueryPlan, PlanError> {
            if self.0 {
                return Err(PlanError::new("model offline"));
            }
            assert_eq!(request.lanes, ["text".to_string()]);
            assert_eq!(request.reference_ms, REF);
            Ok(QueryPlan {
                text: Some("notes".into()),
                ..QueryPlan::default()
            })
        }
    }
    let rewritten = Retrieval::new(&src)
        .text("what did I write down")
        .all_time()
        .planner(Rewriter(false))
        .execute()
        .unwrap();
    assert_eq!(order(&rewritten), vec!["n3-aug"], "only the August note says `notes`");
    assert_eq!(rewritten.plan.as_ref().unwrap().plan.text.as_deref(), Some("notes"));
    let failed = Retrieval::new(&src)
        .text("Lisbon")
        .all_time()
        .planner(Rewriter(true))
        .execute()
        .unwrap();
    assert_eq!(failed.items.len(), 4, "the query ran unplanned");
    assert!(failed
        .warnings
        .iter()
        .any(|w| w.code == WarningCode::PlannerFailed && w.message.contains("model offline")));
}

#[test]
fn question_words_do_not_search() {
    // "when did I" would match every note with those words; the text lane searches what
    // is left ("go", "lisbon") — and a query of question words alone still searches.
    let commit = resolved(
        "q",
        REF,
        vec![
            Node::new(id("a")).with_text("When did I say I did it? I did."),
            Node::new(id("b")).with_text("Lisbon"),
        ],
        &[],
    );
    let r = ask(&commit, r#"{"text": "when did I go to Lisbon"}"#);
    assert_eq!(order(&r), vec!["b"]);
    let only = ask(&commit, r#"{"text": "when did I"}"#);
    assert_eq!(order(&only), vec!["a"]);
}
