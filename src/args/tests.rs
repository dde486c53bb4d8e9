use super::*;
use crate::args::spec::Options;
use crate::core::slice::{SliceParams, SliceState};
use crate::core::slide::{SlideParams, SlideState};
use crate::core::throttle::{ThrottleParams, ThrottleState};
use crate::core::{Kind, Nanos};

fn throttle<'a>(
    args: &[&'a [u8]],
    trusted: impl FnOnce() -> bool,
) -> Result<Request<'a, ThrottleParams>, ArgError> {
    single::<ThrottleState>(args, trusted, Bounds::DEFAULT)
}

fn slide<'a>(
    args: &[&'a [u8]],
    trusted: impl FnOnce() -> bool,
    bounds: Bounds,
) -> Result<Request<'a, SlideParams>, ArgError> {
    single::<SlideState>(args, trusted, bounds)
}

fn slice<'a>(
    args: &[&'a [u8]],
    trusted: impl FnOnce() -> bool,
    bounds: Bounds,
) -> Result<Request<'a, SliceParams>, ArgError> {
    single::<SliceState>(args, trusted, bounds)
}

#[test]
fn every_kind_fits_the_spec_buffers() {
    for kind in crate::kinds::KINDS {
        assert!(kind.params.len() <= spec::MAX_PARAMS, "{}", kind.name);
        assert!(kind.options.len() <= spec::MAX_OPTIONS, "{}", kind.name);
    }
    assert!(ThrottleState::PARAMS.len() <= spec::MAX_PARAMS);
}

#[test]
fn the_tolerance_boundary() {
    // (max_burst + 1) x period / count <= 100 years (3,153,600,000 s),
    // the module's bound on the tolerance (docs/DESIGN.md#throttle); both sides, in seconds and in milliseconds.
    let ok = |args: &[&str]| {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        throttle(&args, || false).is_ok()
    };
    assert!(ok(&["9", "1", "315360000"]));
    assert!(!ok(&["10", "1", "315360000"]));
    assert!(ok(&["19", "2", "315360000"]));
    assert!(!ok(&["20", "2", "315360000"]));
    assert!(ok(&["9", "1", "315360000000", "MS"]));
    assert!(!ok(&["10", "1", "315360000000", "MS"]));
    assert!(ok(&["29", "3", "315360000000", "MS"]));
    assert!(!ok(&["30", "3", "315360000000", "MS"]));
    assert_eq!(
        throttle_err(&["10", "1", "315360000"]),
        "ERR (max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)"
    );
}

fn msg(e: ArgError) -> String {
    e.message().into_string().unwrap()
}

fn throttle_err(args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    msg(throttle(&args, || false).unwrap_err())
}

#[test]
fn decimal_integers_only() {
    assert_eq!(parse_decimal(b"0"), Some(0));
    assert_eq!(parse_decimal(b"007"), Some(7));
    assert_eq!(parse_decimal(b"18446744073709551615"), Some(u64::MAX));
    for bad in [
        "",
        "-1",
        "+1",
        " 1",
        "1 ",
        "1.5",
        "1e3",
        "18446744073709551616",
        "x",
    ] {
        assert_eq!(parse_decimal(bad.as_bytes()), None, "{bad:?}");
    }
}

/// The reader against the standard library's, for every byte value at
/// every position of every length up to nine, and for random digit
/// strings of every length.
#[test]
fn decimal_reader_agrees_with_the_standard_one() {
    let reference = |s: &[u8]| {
        let digits = !s.is_empty() && s.iter().all(u8::is_ascii_digit);
        digits
            .then(|| std::str::from_utf8(s).ok()?.parse::<u64>().ok())
            .flatten()
    };
    for len in 1..=9 {
        let base: Vec<u8> = b"987654321".iter().copied().take(len).collect();
        for pos in 0..len {
            for byte in 0..=255u8 {
                let mut s = base.clone();
                s[pos] = byte;
                assert_eq!(parse_decimal(&s), reference(&s), "{s:?}");
            }
        }
    }
    let mut runner = proptest::test_runner::TestRunner::default();
    runner
        .run(&"0{0,10}[0-9]{1,21}", |s| {
            proptest::prop_assert_eq!(parse_decimal(s.as_bytes()), reference(s.as_bytes()));
            Ok(())
        })
        .unwrap();
}

#[test]
fn throttle_arguments() {
    let ok = |args: &[&str]| {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let r = throttle(&args, || false).unwrap();
        (r.quantity, r.unit, r.at)
    };
    assert_eq!(ok(&["15", "30", "60"]), (1, TimeUnit::Seconds, None));
    assert_eq!(
        ok(&["0", "1", "250", "3", "ms"]),
        (3, TimeUnit::Millis, None)
    );
    assert_eq!(ok(&["0", "1", "1", "MS"]).0, 1);
}

#[test]
fn the_error_table() {
    // arguments => reply
    #[rustfmt::skip]
    let cases: &[(&[&str], &str)] = &[
        (&["-1", "30", "60"], "ERR max_burst must be an integer from 0 to 1000000000000"),
        (&["x", "30", "60"], "ERR max_burst must be an integer from 0 to 1000000000000"),
        (&["15", "0", "60"], "ERR count must be an integer from 1 to 4294967295"),
        (&["15", "30", "0"], "ERR period must be an integer from 1 to 315360000 (seconds)"),
        (&["15", "30", "0", "MS"], "ERR period must be an integer from 1 to 315360000000 (milliseconds, with MS)"),
        (&["15", "30", "60", "-2"], "ERR quantity must be an integer from 0 to 1000000000000"),
        (&["15", "30", "60", "1", "2"], "ERR unknown argument '2'"),
        (&["15", "30", "60", "PX"], "ERR unknown argument 'PX'"),
        (&["15", "30", "60", "MS", "ms"], "ERR MS is given more than once"),
        (&["15", "30", "60", "AT", "5"], "ERR AT is accepted only from the master or the AOF: it carries the master's clock"),
        (&["1000", "1", "315360000"], "ERR (max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)"),
        (&["15", "30", "60", "a\u{0}b"], "ERR unknown argument 'a?b'"),
    ];
    for (args, expected) in cases {
        assert_eq!(throttle_err(args), *expected, "{args:?}");
    }
}

/// RL.SLIDE's PRECISION option: its value in the call's unit, from 0
/// to the window, anywhere after the numbers; the reply to each bad
/// value.
#[test]
fn slide_precision() {
    let run = |args: &[&str]| {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        slide(&args, || false, Bounds::DEFAULT)
            .map(|r| r.params.precision())
            .map_err(msg)
    };
    let d = run;
    assert_eq!(d(&["5", "60"]), Ok(Nanos::ZERO));
    assert_eq!(
        d(&["5", "60", "PRECISION", "6"]),
        Ok(Nanos::new(6_000_000_000))
    );
    assert_eq!(
        d(&["5", "60", "2", "precision", "60"]),
        Ok(Nanos::new(60_000_000_000))
    );
    assert_eq!(
        d(&["5", "60000", "PRECISION", "600", "MS"]),
        Ok(Nanos::new(600_000_000))
    );
    assert_eq!(d(&["5", "60000", "MS", "Precision", "0"]), Ok(Nanos::ZERO));
    // arguments => reply
    #[rustfmt::skip]
    let cases: &[(&[&str], &str)] = &[
        (&["5", "60", "PRECISION", "61"], "ERR PRECISION must be at most the window"),
        (&["5", "60", "MS", "PRECISION", "61"], "ERR PRECISION must be at most the window"),
        (&["5", "60", "PRECISION", "-1"], "ERR PRECISION must be an integer from 0 to 315360000 (seconds)"),
        (&["5", "60", "PRECISION", "1.5"], "ERR PRECISION must be an integer from 0 to 315360000 (seconds)"),
        (&["5", "60", "PRECISION", "x"], "ERR PRECISION must be an integer from 0 to 315360000 (seconds)"),
        (&["5", "60", "MS", "PRECISION", "x"], "ERR PRECISION must be an integer from 0 to 315360000000 (milliseconds, with MS)"),
        (&["5", "60", "PRECISION"], "ERR PRECISION must be an integer from 0 to 315360000 (seconds)"),
        (&["5", "60", "PRECISION", "1", "PRECISION", "1"], "ERR PRECISION is given more than once"),
    ];
    for (args, expected) in cases {
        assert_eq!(run(args).map(|_| ()), Err(expected.to_string()), "{args:?}");
    }
}

#[test]
fn at_is_accepted_from_the_master() {
    let args: Vec<&[u8]> = vec![b"1", b"2", b"3", b"4", b"MS", b"AT", b"123"];
    let r = throttle(&args, || true).unwrap();
    assert_eq!(r.at, Some(Nanos::new(123)));
    let missing: Vec<&[u8]> = vec![b"1", b"2", b"3", b"AT"];
    assert!(matches!(
        throttle(&missing, || true),
        Err(ArgError::Integer { name: "AT", .. })
    ));
}

#[test]
fn configured_bounds_apply_to_clients_only() {
    let tight = Bounds {
        max_slide_limit: 10,
        max_slices: 5,
    };
    let slide_args: Vec<&[u8]> = vec![b"11", b"1"];
    assert_eq!(
        msg(slide(&slide_args, || false, tight).unwrap_err()),
        "ERR limit must be an integer from 1 to 10"
    );
    // The master's replicated form carries AT and its own bounds.
    let slide_at: Vec<&[u8]> = vec![b"11", b"1", b"AT", b"5"];
    assert!(slide(&slide_at, || true, tight).is_ok());
    assert_eq!(
        slide(&slide_at, || false, tight),
        Err(ArgError::AtFromClient)
    );
    let slice_args: Vec<&[u8]> = vec![b"1", b"60", b"6"];
    assert_eq!(
        msg(slice(&slice_args, || false, tight).unwrap_err()),
        "ERR slices must be an integer from 1 to 5"
    );
    let slice_at: Vec<&[u8]> = vec![b"1", b"60", b"6", b"AT", b"5"];
    assert!(slice(&slice_at, || true, tight).is_ok());
}

#[test]
fn only_the_kinds_with_a_ceiling_need_the_configured_bounds() {
    assert!(capped(SlideState::PARAMS));
    assert!(capped(SliceState::PARAMS));
    assert!(!capped(ThrottleState::PARAMS));
    assert!(!capped(SlideState::OPTIONS));
}

/// RL.ALLOW's arguments after the name: the options and each limit's own
/// options (UNITS, SHADOW), or the error's text.
fn allow(args: &[&str]) -> Result<(Options<'static>, Vec<LimitSpec>), String> {
    let words: Vec<&'static [u8]> = args
        .iter()
        .map(|a| &*Box::leak(a.as_bytes().to_vec().into_boxed_slice()))
        .collect();
    let mut specs = arrayvec::ArrayVec::new();
    let options = several(&words, true, || false, Bounds::DEFAULT, &mut specs).map_err(msg)?;
    Ok((options, specs.to_vec()))
}

#[test]
fn max_wait_on_throttle_and_allow() {
    let args: Vec<&[u8]> = vec![b"1", b"10", b"60", b"2", b"MAXWAIT", b"5"];
    assert_eq!(
        throttle(&args, || false).unwrap().max_wait,
        Some(Nanos::new(5_000_000_000))
    );
    // MS applies wherever it stands.
    let args: Vec<&[u8]> = vec![b"1", b"10", b"60", b"maxwait", b"0", b"MS"];
    assert_eq!(
        throttle(&args, || false).unwrap().max_wait,
        Some(Nanos::ZERO)
    );
    let args: Vec<&[u8]> = vec![b"1", b"10", b"60"];
    assert_eq!(throttle(&args, || false).unwrap().max_wait, None);
    let (options, _) = allow(&[
        "1", "k", "THROTTLE", "1", "10", "60", "MS", "MAXWAIT", "250",
    ])
    .unwrap();
    assert_eq!(options.max_wait, Some(Nanos::new(250_000_000)));

    // arguments => reply
    #[rustfmt::skip]
    let singles: &[(&[&str], &str)] = &[
        (&["1", "10", "60", "MAXWAIT", "-1"], "ERR MAXWAIT must be an integer from 0 to 315360000 (seconds)"),
        (&["1", "10", "60", "MAXWAIT", "315360001"], "ERR MAXWAIT must be an integer from 0 to 315360000 (seconds)"),
        (&["1", "10", "60", "MAXWAIT"], "ERR MAXWAIT must be an integer from 0 to 315360000 (seconds)"),
        (&["1", "10", "60", "MS", "MAXWAIT", "x"], "ERR MAXWAIT must be an integer from 0 to 315360000000 (milliseconds, with MS)"),
        (&["1", "10", "60", "MAXWAIT", "1", "MAXWAIT", "1"], "ERR MAXWAIT is given more than once"),
    ];
    for (args, expected) in singles {
        assert_eq!(throttle_err(args), *expected, "{args:?}");
    }
    let slide_args: Vec<&[u8]> = vec![b"5", b"60", b"MAXWAIT", b"1"];
    assert_eq!(
        msg(slide(&slide_args, || false, Bounds::DEFAULT).unwrap_err()),
        "ERR MAXWAIT takes THROTTLE limits only"
    );
    #[rustfmt::skip]
    let several_cases: &[(&[&str], &str)] = &[
        (&["2", "a", "b", "THROTTLE", "1", "10", "60", "SLIDE", "5", "60", "MAXWAIT", "1"], "ERR MAXWAIT takes THROTTLE limits only: spec 2 is SLIDE"),
        (&["2", "a", "b", "LEASE", "1", "10", "SLICE", "5", "60", "6", "MAXWAIT", "1", "ID", "x"], "ERR MAXWAIT takes THROTTLE limits only: spec 1 is LEASE"),
        (&["1", "a", "THROTTLE", "1", "10", "60", "MAXWAIT", "1", "maxwait", "2"], "ERR MAXWAIT is given more than once"),
        (&["1", "a", "THROTTLE", "1", "10", "60", "MAXWAIT", "1.5"], "ERR MAXWAIT must be an integer from 0 to 315360000 (seconds)"),
    ];
    for (args, expected) in several_cases {
        assert_eq!(
            allow(args).map(|_| ()),
            Err(expected.to_string()),
            "{args:?}"
        );
    }
}

#[test]
fn units_and_shadow_in_specs() {
    let (options, specs) = allow(&[
        "3", "l", "r", "t", "LEASE", "4", "120", "THROTTLE", "60", "60", "60", "SHADOW",
        "THROTTLE", "100000", "100000", "60", "UNITS", "1500", "ID", "req-7",
    ])
    .unwrap();
    assert_eq!(options.quantity, 1);
    let own: Vec<(u64, bool)> = specs.iter().map(|l| (l.quantity, l.shadow)).collect();
    assert_eq!(own, [(1, false), (1, true), (1500, false)]);
    assert_eq!(options.shadows, 0b010);
    // Any order, any case, with the kind's own options.
    let (options, specs) = allow(&[
        "2",
        "s",
        "t",
        "SLIDE",
        "5",
        "60",
        "shadow",
        "PRECISION",
        "1",
        "units",
        "0",
        "THROTTLE",
        "1",
        "10",
        "60",
        "QUANTITY",
        "2",
    ])
    .unwrap();
    assert_eq!((specs[0].quantity, specs[0].shadow), (0, true));
    assert_eq!((specs[1].quantity, specs[1].shadow), (2, false));
    assert_eq!((options.quantity, options.shadows), (2, 0b01));

    // arguments => reply
    #[rustfmt::skip]
    let cases: &[(&[&str], &str)] = &[
        (&["1", "a", "THROTTLE", "1", "10", "60", "UNITS", "1000000000001"], "ERR spec 1 (THROTTLE): UNITS must be an integer from 0 to 1000000000000"),
        (&["1", "a", "THROTTLE", "1", "10", "60", "UNITS"], "ERR spec 1 (THROTTLE): UNITS must be an integer from 0 to 1000000000000"),
        (&["2", "a", "b", "THROTTLE", "1", "10", "60", "SLIDE", "5", "60", "UNITS", "1", "UNITS", "2"], "ERR spec 2 (SLIDE): UNITS is given more than once"),
        (&["2", "a", "b", "THROTTLE", "1", "10", "60", "SLIDE", "5", "60", "SHADOW", "Shadow"], "ERR spec 2 (SLIDE): SHADOW is given more than once"),
        (&["2", "a", "b", "THROTTLE", "1", "10", "60", "SHADOW", "SLIDE", "5", "60", "SHADOW"], "ERR at least one spec must be enforced: every spec is SHADOW"),
        (&["1", "a", "THROTTLE", "1", "10", "60", "SHADOW", "MAXWAIT", "1"], "ERR at least one spec must be enforced: every spec is SHADOW"),
        (&["2", "a", "b", "THROTTLE", "1", "10", "60", "SLIDE", "5", "60", "SHADOW", "MAXWAIT", "1"], "ERR MAXWAIT takes THROTTLE limits only: spec 2 is SLIDE"),
        (&["1", "a", "THROTTLE", "1", "10", "60", "QUANTITY", "1", "SHADOW"], "ERR unknown argument 'SHADOW'"),
    ];
    for (args, expected) in cases {
        assert_eq!(
            allow(args).map(|_| ()),
            Err(expected.to_string()),
            "{args:?}"
        );
    }
}

#[test]
fn units_and_shadow_belong_to_allow_and_peek_only() {
    let single: Vec<&[u8]> = vec![b"1", b"10", b"60", b"SHADOW"];
    assert_eq!(
        msg(throttle(&single, || false).unwrap_err()),
        "ERR unknown argument 'SHADOW'"
    );
    let single: Vec<&[u8]> = vec![b"1", b"10", b"60", b"2", b"UNITS", b"3"];
    assert_eq!(
        msg(throttle(&single, || false).unwrap_err()),
        "ERR unknown argument 'UNITS'"
    );
    for (args, expected) in [
        (
            vec!["THROTTLE", "1", "10", "60", "SHADOW", "1"],
            "ERR unknown argument 'SHADOW'",
        ),
        (
            vec!["THROTTLE", "1", "10", "60", "units", "1", "1"],
            "ERR unknown argument 'units'",
        ),
        (
            vec!["THROTTLE", "1", "10", "60", "1", "SHADOW"],
            "ERR unknown argument 'SHADOW'",
        ),
        (
            vec!["THROTTLE", "1", "10", "60", "1", "MAXWAIT", "1"],
            "ERR unknown argument 'MAXWAIT'",
        ),
    ] {
        let words: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        assert_eq!(
            msg(refund(&words, || false, Bounds::DEFAULT).unwrap_err()),
            expected,
            "{args:?}"
        );
        assert_eq!(
            msg(charge(&words, || false, Bounds::DEFAULT).unwrap_err()),
            expected,
            "{args:?}"
        );
    }
}
