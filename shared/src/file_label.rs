//! File labels: a `host:port` or a name made safe as part of a file name, and unique among
//! the names of one folder.

use std::collections::BTreeSet;

/// File label for a `host:port`: every character outside `[A-Za-z0-9._-]` becomes `_`.
pub fn result_file_label(host_port: &str) -> String {
    host_port
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The longest file label [`unique_file_labels`] makes (a file name must stay well under the
/// file system's 255 bytes with its prefix and extension).
pub const MAX_FILE_LABEL_CHARS: usize = 64;

/// A file label for each name, as [`result_file_label`] makes it, cut to
/// [`MAX_FILE_LABEL_CHARS`], and made unique: names that clean to the same label (`a/b`, `a_b`,
/// `a?b`) get `-2`, `-3`… in their order, so none overwrites another's file. The names
/// themselves are kept inside the files.
pub fn unique_file_labels(names: &[String]) -> Vec<String> {
    let mut taken = BTreeSet::new();
    names
        .iter()
        .map(|name| {
            let base: String = result_file_label(name).chars().take(MAX_FILE_LABEL_CHARS).collect();
            let mut label = base.clone();
            let mut n = 1;
            while !taken.insert(label.clone()) {
                n += 1;
                label = format!("{base}-{n}");
            }
            label
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_clean_alike_get_labels_of_their_own_and_long_ones_are_cut() {
        let names: Vec<String> = ["a/b", "a_b", "a?b", "a_b-2", &"x".repeat(300)]
            .map(String::from)
            .to_vec();
        let labels = unique_file_labels(&names);
        assert_eq!(labels[..3], ["a_b", "a_b-2", "a_b-3"]);
        // A name whose own label is taken by a suffix gets the next.
        assert_eq!(labels[3], "a_b-2-2");
        assert_eq!(labels[4], "x".repeat(MAX_FILE_LABEL_CHARS));
    }

    #[test]
    fn file_labels() {
        assert_eq!(result_file_label("10.0.0.1:8080"), "10.0.0.1_8080");
        assert_eq!(result_file_label("[::1]:9090"), "___1__9090");
    }
}
