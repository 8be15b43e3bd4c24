//! POSIX sh quoting: the one quoter for the ssh transport (`runner`, where the remote shell
//! parses the command line) and for the rendered plans (`render`: text, table, script); and an
//! argv as shown in an error message (`shown_argv`, long words cut). Pure.

/// Quote one word for a POSIX shell. Words made only of `[A-Za-z0-9_./:=,+@%-]` stay bare
/// (none of these is special to sh, even at the start of a word); anything else, including
/// the empty word, is put in single quotes with each `'` written as `'\''`.
pub fn sh_quote(word: &str) -> String {
    let bare = !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"_./:=,+@%-".contains(&b));
    if bare {
        return word.to_string();
    }
    let mut s = String::with_capacity(word.len() + 2);
    s.push('\'');
    for c in word.chars() {
        if c == '\'' {
            s.push_str("'\\''");
        } else {
            s.push(c);
        }
    }
    s.push('\'');
    s
}

/// Quote each word and join with spaces.
pub fn sh_join<S: AsRef<str>>(words: &[S]) -> String {
    words.iter().map(|w| sh_quote(w.as_ref())).collect::<Vec<_>>().join(" ")
}

/// The longest argv word Linux passes to a program: `MAX_ARG_STRLEN` is 32 pages (131,072 bytes)
/// with the word's NUL; a longer one fails `execve` with E2BIG ("Argument list too long").
pub const MAX_ARGV_WORD_BYTES: usize = 131_071;

/// Characters of one argv word shown in a message; the rest is replaced by a count.
pub const SHOWN_WORD_CHARS: usize = 200;

/// An argv as shown in a message: each word with control characters escaped and cut after
/// [`SHOWN_WORD_CHARS`] characters with the number of bytes left out, so that a long value (a
/// description of 64 KiB, a list of thousands of names) never fills the terminal.
pub fn shown_argv(argv: &[String]) -> String {
    argv.iter().map(|w| slurmplan_diag::cut_after(w, SHOWN_WORD_CHARS)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_and_quoted() {
        assert_eq!(sh_quote("name=a,b"), "name=a,b");
        assert_eq!(sh_quote("GrpTRESMins=cpu=1,mem=-1"), "GrpTRESMins=cpu=1,mem=-1");
        assert_eq!(sh_quote("-i"), "-i");
        assert_eq!(sh_quote("partition="), "partition=");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote("$HOME"), "'$HOME'");
        assert_eq!(sh_quote("~x"), "'~x'");
        assert_eq!(sh_join(&["sacctmgr", "-i", "description=a b"]), "sacctmgr -i 'description=a b'");
    }
}
