//! Reordering rows in place by swaps: a permutation's cycles worked out once
//! ([`swaps_of`]), then applied alike to a table's entity list, each of its columns and
//! their change marks ([`apply_swaps`]). Safe code: every move is a `slice::swap`.

/// The swaps that apply `perm` in place: after [`apply_swaps`] with them, `v[i]` holds
/// what `v[perm[i]]` held. Worked out once per table (walking `perm`'s cycles), then
/// applied to the entity list and to every column alike. `placed` is scratch.
pub(crate) fn swaps_of(perm: &[u32], placed: &mut Vec<bool>, swaps: &mut Vec<(u32, u32)>) {
    placed.clear();
    placed.resize(perm.len(), false);
    swaps.clear();
    for start in 0..perm.len() {
        if placed[start] {
            continue;
        }
        // Walk the cycle through `start`: each step pulls the value that belongs at `i`.
        let mut i = start;
        loop {
            placed[i] = true;
            let j = perm[i] as usize;
            if j == start {
                break;
            }
            swaps.push((i as u32, j as u32));
            i = j;
        }
    }
}

/// Applies swaps from [`swaps_of`], in order.
#[inline]
pub(crate) fn apply_swaps<T>(v: &mut [T], swaps: &[(u32, u32)]) {
    for &(i, j) in swaps {
        v.swap(i as usize, j as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_pulls_each_element_from_its_source() {
        let (mut placed, mut swaps) = (Vec::new(), Vec::new());
        for perm in [
            vec![],
            vec![0],
            vec![1, 2, 0],
            vec![2, 0, 1],
            vec![3, 2, 1, 0],
            vec![0, 2, 1, 4, 3],
            vec![4, 0, 3, 1, 2, 5],
        ] {
            let before: Vec<String> = (0..perm.len()).map(|i| format!("v{i}")).collect();
            let mut v = before.clone();
            swaps_of(&perm, &mut placed, &mut swaps);
            apply_swaps(&mut v, &swaps);
            let want: Vec<String> = perm.iter().map(|&p| before[p as usize].clone()).collect();
            assert_eq!(v, want, "perm {perm:?}");
        }
    }
}
