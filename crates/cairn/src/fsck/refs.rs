//! The repository's own refs: `HEAD` and the format marker. Either can be lost or
//! damaged without costing any data (the repository opens on a stand-in branch), so
//! `fsck` reports them and `fsck --repair` writes them again.

use cairn_graph::refs::HEAD;

use crate::error::Result;
use crate::repo::{Repo, FORMAT_META, FORMAT_VALUE};

impl Repo {
    /// Problems with `HEAD` and the format marker, one line each.
    pub(super) fn check_own_refs(&self, problems: &mut Vec<String>) {
        let fix = "`cairn fsck --repair` or `cairn branch switch <branch>` sets it";
        match self.refs().current_branch() {
            Ok(Some(_)) => {}
            Ok(None) => problems.push(format!("HEAD is missing ({fix})")),
            Err(e) => problems.push(format!("HEAD is damaged: {e} ({fix})")),
        }
        let fix = "`cairn fsck --repair` writes it again";
        match self.refs().meta(FORMAT_META) {
            Ok(Some(v)) if v == FORMAT_VALUE => {}
            Ok(Some(v)) => problems.push(format!(
                "meta/{FORMAT_META} holds {:?}, expected {:?}",
                String::from_utf8_lossy(&v),
                String::from_utf8_lossy(FORMAT_VALUE)
            )),
            Ok(None) => problems.push(format!("meta/{FORMAT_META} is missing ({fix})")),
            Err(e) => problems.push(format!("meta/{FORMAT_META} is damaged: {e} ({fix})")),
        }
    }

    /// Writes `HEAD` (naming the branch the repository now works on, see
    /// [`Repo::current_branch`]) and the format marker again where they are missing or
    /// damaged; returns what it wrote. Sound refs are left alone.
    pub fn repair_refs(&self) -> Result<Vec<String>> {
        let mut repaired = Vec::new();
        if !matches!(self.refs().current_branch(), Ok(Some(_))) {
            let branch = self.current_branch()?;
            self.refs().set_current_branch(&branch)?;
            repaired.push(format!("{HEAD} set to branch {branch}"));
        }
        let meta = format!("meta/{FORMAT_META}");
        match self.refs().meta(FORMAT_META) {
            Ok(Some(_)) => {}
            Ok(None) => {
                self.refs().register_meta(FORMAT_META, FORMAT_VALUE)?;
                repaired.push(format!("{meta} written"));
            }
            Err(_) => {
                if self.store().remove_damaged_ref(&meta)? {
                    self.refs().register_meta(FORMAT_META, FORMAT_VALUE)?;
                    repaired.push(format!("{meta} written"));
                }
            }
        }
        self.store().flush()?;
        Ok(repaired)
    }
}
