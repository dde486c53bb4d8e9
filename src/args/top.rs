//! RL.TOP's arguments: `[COUNT n]`.

use super::{integer, printable, ArgError};

/// How many lines RL.TOP answers when `COUNT` is not given (at most the
/// summary's size).
pub const DEFAULT_COUNT: usize = 10;

/// `[COUNT n]` after the command name: `n` from 1 to `size` (the
/// summary's size, at least 1), or [`DEFAULT_COUNT`] capped at `size`.
pub fn top(args: &[&[u8]], size: usize) -> Result<usize, ArgError> {
    let mut count = None;
    let mut i = 0;
    while let Some(&word) = args.get(i) {
        if !word.eq_ignore_ascii_case(b"COUNT") {
            return Err(ArgError::Extra(printable(word)));
        }
        if count.is_some() {
            return Err(ArgError::Repeated("COUNT"));
        }
        let value = args.get(i + 1).copied().unwrap_or_default();
        let n = integer(value, "COUNT", 1, size as u64, None)?;
        count = Some(usize::try_from(n).unwrap_or(size));
        i += 2;
    }
    Ok(count.unwrap_or(DEFAULT_COUNT.min(size)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(e: ArgError) -> String {
        e.message().to_string_lossy().into_owned()
    }

    #[test]
    fn count_defaults_to_ten_within_the_size() {
        assert_eq!(top(&[], 128), Ok(10));
        assert_eq!(top(&[], 3), Ok(3));
        assert_eq!(top(&[b"count", b"128"], 128), Ok(128));
        assert_eq!(top(&[b"COUNT", b"1"], 128), Ok(1));
    }

    #[test]
    fn bad_counts_name_the_argument_and_its_range() {
        let range = "ERR COUNT must be an integer from 1 to 128";
        for bad in [&b"0"[..], b"129", b"-1", b"x", b""] {
            assert_eq!(message(top(&[b"COUNT", bad], 128).unwrap_err()), range);
        }
        assert_eq!(
            message(top(&[b"COUNT"], 128).unwrap_err()),
            range,
            "a missing value"
        );
        assert_eq!(
            message(top(&[b"COUNT", b"2", b"count", b"3"], 128).unwrap_err()),
            "ERR COUNT is given more than once"
        );
        assert_eq!(
            message(top(&[b"LIMIT", b"2"], 128).unwrap_err()),
            "ERR unknown argument 'LIMIT'"
        );
    }
}
