//! Lists of CPU numbers, written with ranges: `8-27,40-59`.

use std::fmt;

/// The highest CPU number a configuration may name.
pub const CPU_ID_MAX: u16 = 1023;

/// CPU numbers in the order given. Order matters for `cpubind`: thread `i` of an entry is
/// bound to the `i`-th CPU.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CpuList(Vec<u16>);

impl CpuList {
    pub fn new(cpus: Vec<u16>) -> Self {
        Self(cpus)
    }

    pub fn cpus(&self) -> &[u16] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, cpu: u16) -> bool {
        self.0.contains(&cpu)
    }

    /// The first CPU listed more than once, if any.
    pub fn first_duplicate(&self) -> Option<u16> {
        let mut seen = [false; CPU_ID_MAX as usize + 1];
        for &cpu in &self.0 {
            let slot = &mut seen[usize::from(cpu.min(CPU_ID_MAX))];
            if *slot {
                return Some(cpu);
            }
            *slot = true;
        }
        None
    }
}

impl fmt::Display for CpuList {
    /// Ascending runs of consecutive CPUs print as ranges, so that parsing the output gives
    /// back the same list in the same order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut index = 0;
        while index < self.0.len() {
            let start = self.0[index];
            let mut end = index;
            while end + 1 < self.0.len() && self.0[end + 1] == self.0[end].wrapping_add(1) {
                end += 1;
            }
            if index > 0 {
                f.write_str(",")?;
            }
            if end == index {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{}", self.0[end])?;
            }
            index = end + 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_cpus_print_as_ranges_and_keep_their_order() {
        let list = CpuList::new(vec![8, 9, 10, 40, 41, 3, 7]);
        assert_eq!(list.to_string(), "8-10,40-41,3,7");
    }

    #[test]
    fn duplicates_are_found() {
        assert_eq!(CpuList::new(vec![1, 2, 3]).first_duplicate(), None);
        assert_eq!(CpuList::new(vec![1, 2, 1]).first_duplicate(), Some(1));
    }
}
