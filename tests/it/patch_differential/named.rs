//! Named cases: each class of disagreement with git found before, as its own test.

use super::*;

/// The mail for Ada's change of the one file `f` from `before` to `after`, and the state
/// before it.
pub(super) fn change_of_f(before: &[u8], after: &[u8], message: &str) -> (State, Vec<u8>) {
    let before = state(&[("f", REGULAR, before)]);
    let after = state(&[("f", REGULAR, after)]);
    let mail = mail_for(&before, &after, &ada(), message);
    (before, mail)
}

pub(super) fn lines_of(count: usize, word: &str) -> Vec<u8> {
    (0..count)
        .map(|_| format!("{word}\n"))
        .collect::<String>()
        .into_bytes()
}

/// Emptying a file: the reverse also applies, which once made it look already applied.
#[test]
pub(super) fn emptying_a_file_is_applied() {
    let (before, mail) = change_of_f(b"a\nb\n", b"", "empty it");
    assert_both_apply(&case("emptying a file", mail, &before));
}

/// Deleting the last lines of a file whose remaining lines look like the context.
#[test]
pub(super) fn deleting_trailing_lines_that_match_the_context_is_applied() {
    let (before, mail) = change_of_f(&lines_of(3, "a"), b"a\n", "drop the tail");
    assert_both_apply(&case("trailing lines", mail, &before));
}

/// The patch's own commit is in the branch, but a later commit reverted it: the change is not
/// in the tree, so the patch applies.
#[test]
pub(super) fn a_patch_whose_commit_was_reverted_is_applied() {
    let before = state(&[("f", REGULAR, b"one\ntwo\nthree\n")]);
    let after = state(&[("f", REGULAR, b"one\n2\nthree\n")]);
    let author = ada();
    let mail = mail_for(&before, &after, &author, "change two");
    let mut reverted = case("reverted", mail, &before);
    reverted.target = vec![
        (before.clone(), base_author(), "base\n".to_owned()),
        (after.clone(), author.clone(), "change two\n".to_owned()),
        (
            before.clone(),
            base_author(),
            "Revert \"change two\"\n".to_owned(),
        ),
    ];
    assert_both_apply(&reverted);
}

/// A new-file patch onto an existing, different file.
#[test]
pub(super) fn a_new_file_onto_an_existing_file_is_refused() {
    let before = state(&[("a", REGULAR, b"a\n")]);
    let after = with(&before, &[("f", Some((REGULAR, b"new\n")))]);
    let mail = mail_for(&before, &after, &ada(), "add f");
    let target = with(&before, &[("f", Some((REGULAR, b"other\n")))]);
    assert_both_refuse(&case("new onto existing", mail, &target));
}

/// A deletion whose preimage is not the file there.
#[test]
pub(super) fn a_deletion_of_a_different_file_is_refused() {
    let before = state(&[("a", REGULAR, b"a\n"), ("f", REGULAR, b"a\nb\n")]);
    let after = with(&before, &[("f", None)]);
    let mail = mail_for(&before, &after, &ada(), "delete f");
    let target = with(&before, &[("f", Some((REGULAR, b"a\nb\nc\n")))]);
    assert_both_refuse(&case("deletion", mail, &target));
}

/// A rename, and a copy, onto a file that exists.
#[test]
pub(super) fn a_rename_or_copy_onto_an_existing_file_is_refused() {
    let content = lines_of(20, "same");
    let before = state(&[("f", REGULAR, &content)]);
    let target = with(&before, &[("g", Some((REGULAR, b"other\n")))]);
    let renamed = with(&before, &[("f", None), ("g", Some((REGULAR, &content)))]);
    let mail = mail_for(&before, &renamed, &ada(), "rename f to g");
    assert!(String::from_utf8_lossy(&mail).contains("rename from f"));
    assert_both_refuse(&case("rename onto existing", mail, &target));
    let mut edited = content.clone();
    edited.extend_from_slice(b"one more\n");
    let copied = with(
        &before,
        &[
            ("f", Some((REGULAR, &edited))),
            ("g", Some((REGULAR, &content))),
        ],
    );
    let mail = mail_for(&before, &copied, &ada(), "copy f to g");
    assert!(String::from_utf8_lossy(&mail).contains("copy from f"));
    assert_both_refuse(&case("copy onto existing", mail, &target));
}

/// A hunk with no context after its change must match at the end of the file.
#[test]
pub(super) fn a_hunk_that_must_end_the_file_is_refused_when_lines_follow() {
    let (_, mail) = change_of_f(b"a\nb\nc\n", b"a\nb\nc\nd\n", "append d");
    let target = state(&[("f", REGULAR, b"a\nb\nc\nx\n")]);
    assert_both_refuse(&case("end of file", mail, &target));
}

/// A hunk header whose counts are smaller than its lines.
#[test]
pub(super) fn a_hunk_whose_counts_are_too_small_is_refused() {
    let (before, mail) = change_of_f(b"a\nb\nc\n", b"a\nB\nc\n", "b to B");
    let mail = String::from_utf8(mail).unwrap();
    assert!(mail.contains("@@ -1,3 +1,3 @@"), "{mail}");
    let mail = mail.replace("@@ -1,3 +1,3 @@", "@@ -1,2 +1,2 @@");
    assert_both_refuse(&case("counts", mail.into_bytes(), &before));
}

/// A patch cut off in the middle of a hunk.
#[test]
pub(super) fn a_truncated_patch_is_refused() {
    let before = state(&[("f", REGULAR, &lines_of(10, "line"))]);
    let mut edited = lines_of(10, "line");
    edited.extend_from_slice(b"one\ntwo\nthree\n");
    let after = state(&[("f", REGULAR, &edited)]);
    let mail = String::from_utf8(mail_for(&before, &after, &ada(), "three more")).unwrap();
    // Cut after a whole line, and in the middle of one.
    let cut = mail.find("+two").expect("the hunk");
    assert_both_refuse(&case(
        "truncated at a line",
        mail.as_bytes()[..cut].to_vec(),
        &before,
    ));
    assert_both_refuse(&case(
        "truncated in a line",
        mail.as_bytes()[..cut + 2].to_vec(),
        &before,
    ));
    // The last line without its newline: the hunk is complete but for one byte.
    let end = mail.find("+three").expect("the last line") + "+three".len();
    assert_both_refuse(&case(
        "truncated at the last newline",
        mail.as_bytes()[..end].to_vec(),
        &before,
    ));
}

/// A folder replaced by a file of the same name (format-patch lists the new file first).
#[test]
pub(super) fn a_folder_replaced_by_a_file_is_applied() {
    let before = state(&[
        ("d/x", REGULAR, b"x\n"),
        ("d/y", REGULAR, b"y\n"),
        ("e", REGULAR, b"e\n"),
    ]);
    let after = state(&[("d", REGULAR, b"now a file\n"), ("e", REGULAR, b"e\n")]);
    let mail = mail_for(&before, &after, &ada(), "d becomes a file");
    let facts = assert_both_apply(&case("folder to file", mail, &before));
    assert!(facts.contains("d becomes a file"), "{facts}");
}

/// A folder replaced by a symbolic link, and a link replaced by a folder.
#[test]
pub(super) fn a_symlink_and_paths_beneath_it_in_one_patch_are_applied() {
    let folder = state(&[
        ("d/x", REGULAR, b"x\n"),
        ("d/y/z", REGULAR, b"z\n"),
        ("e", REGULAR, b"e\n"),
    ]);
    let link = state(&[("d", SYMLINK, b"e"), ("e", REGULAR, b"e\n")]);
    let mail = mail_for(&folder, &link, &ada(), "d becomes a link");
    assert_both_apply(&case("folder to link", mail, &folder));
    let mail = mail_for(&link, &folder, &ada(), "d becomes a folder");
    assert_both_apply(&case("link to folder", mail, &link));
}

/// A submodule bump (`Subproject commit a` to `b`), which once crashed inside libgit2.
#[test]
pub(super) fn a_submodule_bump_is_applied() {
    let old = b"1111111111111111111111111111111111111111";
    let new = b"2222222222222222222222222222222222222222";
    let before = state(&[("a", REGULAR, b"a\n"), ("sub", GITLINK, old)]);
    let after = state(&[("a", REGULAR, b"a\n"), ("sub", GITLINK, new)]);
    let mail = mail_for(&before, &after, &ada(), "bump sub");
    assert!(String::from_utf8_lossy(&mail).contains("+Subproject commit 2222"));
    assert_both_apply(&case("submodule bump", mail, &before));
}

/// `old mode 100644` / `new mode 160000` on a regular file: git refuses to make a gitlink of it.
#[test]
pub(super) fn a_mode_change_into_a_gitlink_is_refused() {
    let before = state(&[("f", REGULAR, b"text\n")]);
    let after = state(&[("f", EXECUTABLE, b"text\n")]);
    let mail = String::from_utf8(mail_for(&before, &after, &ada(), "mode")).unwrap();
    let mail = mail.replace("new mode 100755", "new mode 160000");
    assert_both_refuse(&case("gitlink mode", mail.into_bytes(), &before));
}

pub(super) fn header_case(label: &str, edit: impl Fn(String) -> String) -> (Case, State) {
    let (before, mail) = change_of_f(b"a\n", b"a\nb\n", "add b\n\nA body.");
    let mail = String::from_utf8(mail).unwrap();
    (case(label, edit(mail).into_bytes(), &before), before)
}

/// `Date: ... PDT` is -0700; `Date: yesterday` is refused.
#[test]
pub(super) fn mail_dates_are_read_as_git_reads_them() {
    let (pdt, _) = header_case("PDT", |mail| {
        replace_date(&mail, "Mon, 6 Jul 2026 14:12:09 PDT")
    });
    let facts = assert_both_apply(&pdt);
    assert!(facts.contains(" 1783372329 -420 "), "{facts}");
    let (yesterday, _) = header_case("yesterday", |mail| replace_date(&mail, "yesterday"));
    assert_both_refuse(&yesterday);
}

pub(super) fn replace_date(mail: &str, date: &str) -> String {
    String::from_utf8(replace_header(mail.as_bytes(), "Date", date)).unwrap()
}

/// A body in ISO-8859-1 is converted to UTF-8.
#[test]
pub(super) fn a_latin1_body_is_converted_to_utf8() {
    let (before, mail) = change_of_f(b"a\n", b"a\nb\n", "add b\n\nCafé crème.");
    let mail = String::from_utf8(mail).unwrap();
    assert!(mail.contains("charset=UTF-8"), "{mail}");
    let latin1: Vec<u8> = mail
        .replace("charset=UTF-8", "charset=ISO-8859-1")
        .chars()
        .map(|c| c as u32 as u8)
        .collect();
    let facts = assert_both_apply(&case("latin-1", latin1, &before));
    assert!(facts.contains("Café crème."), "{facts}");
}

/// 8-bit text in every charset git am meets: undeclared (read as Latin-1 unless it is UTF-8),
/// declared rightly, declared as UTF-8 while Latin-1, declared as Latin-1 while UTF-8, and
/// windows-1252 (the body recoded, the raw header bytes as Latin-1): the same commit as git's.
#[test]
pub(super) fn eight_bit_text_in_every_charset_gives_git_ams_commit() {
    for recoding in super::cases::Recoding::ALL {
        let (before, mail) = change_of_f(b"a\n", b"a\nb\n", "add b\n\nA body.");
        let mail = super::cases::recoded(&mail, recoding);
        let facts = assert_both_apply(&case(&format!("{recoding:?}"), mail, &before));
        // git's commit is UTF-8 throughout, whatever the mail held.
        assert!(!facts.contains('\u{fffd}'), "{facts}");
        assert!(facts.contains("Jos"), "{facts}");
    }
}

/// `From: ada@example.org (Ada Lovelace)` names Ada Lovelace.
#[test]
pub(super) fn a_from_with_the_name_in_a_comment_keeps_the_name() {
    let (comment, _) = header_case("comment", |mail| {
        String::from_utf8(replace_header(
            mail.as_bytes(),
            "From",
            "ada@example.org (Ada Lovelace)",
        ))
        .unwrap()
    });
    let facts = assert_both_apply(&comment);
    assert!(
        facts.contains("\"Ada Lovelace\" <\"ada@example.org\">"),
        "{facts}"
    );
}

/// A no-break space or an ideographic space at the end of a line stays in the message.
#[test]
pub(super) fn trailing_non_ascii_spaces_stay_in_the_message() {
    let (before, mail) = change_of_f(b"a\n", b"b\n", "spaces\u{3000}\n\nno-break\u{a0}\n");
    let facts = assert_both_apply(&case("spaces", mail, &before));
    assert!(facts.contains(r"no-break\u{a0}"), "{facts}");
}
