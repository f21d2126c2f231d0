//! Change marks: per row of each column, whether the last Sync (with `S` stages: the last
//! `S` Syncs, everything since any system last ran) wrote the value (*changed*) or gave
//! the entity the component (*added*). What `Changed<C>` and `Added<C>` read. With
//! several stages the marks are kept in one layer per stage beside their union (see
//! [`TypeMarks`]); with one stage there are no layers and nothing below changes.
//!
//! A column's marks are two bit sets over plain `u64` words, bit `i` of word `i / 64` for
//! row `i` (bitvec's `Lsb0` order). Everything here works on the raw words, as the query
//! path of `storage::mask` does: ranges are set a word at a time (a `memset` inside the
//! range), single rows and the query test read one word. Growing the words with zeros and
//! then setting the range with bitvec's `BitSlice::fill` costs clearly more than the raw
//! fill, one `memset`, in the Sync of many summed outputs. A test checks that bitvec's
//! `BitSlice` view of the words agrees bit for bit (Miri-clean under Tree Borrows with
//! strict provenance, like the `BitArray` use in `storage::mask`).
//!
//! The word vectors grow lazily and only as far as the highest marked row: bits past
//! the end are zero, so an unmarked column costs no words, clearing is `Vec::clear` (O(1),
//! capacity kept) and a query skips a column whose vector is empty. Rows move with their
//! values: a swap-remove moves the last row's bits into the hole and clears the last
//! position, so every bit at or past the column's length is always zero.

use std::ops::Range;

/// One bit set over rows, grown on demand (bits past the end are zero).
#[derive(Default, Debug, PartialEq, Eq)]
pub(crate) struct Bits(Vec<u64>);

// `clone_from` by hand at every level (derived `Clone` would allocate anew): restoring a
// snapshot into a world of the same shape allocates nothing.
impl Clone for Bits {
    fn clone(&self) -> Self {
        Bits(self.0.clone())
    }
    fn clone_from(&mut self, src: &Self) {
        self.0.clone_from(&src.0);
    }
}

impl Bits {
    /// The words: bit `row % 64` of word `row / 64` (empty: no row marked).
    #[inline]
    pub(crate) fn words(&self) -> &[u64] {
        &self.0
    }

    /// Whether `row` is set.
    #[inline]
    pub(crate) fn get(&self, row: usize) -> bool {
        test(&self.0, row)
    }

    /// Sets `row`: one bit store in a word that exists (a spawn's or a lone write's
    /// mark, one per spawned component), else the range path's growth.
    #[inline]
    pub(crate) fn set_row(&mut self, row: usize) {
        match self.0.get_mut(row / 64) {
            Some(w) => *w |= 1 << (row % 64),
            None => self.set_range(row..row + 1),
        }
    }

    /// Sets `rows`: whole words at once (a `memset` for the inside of the range), so a
    /// run of a million rows costs some 16k word stores.
    pub(crate) fn set_range(&mut self, rows: Range<usize>) {
        // One row in a word that exists: `set_row`'s bit store, without the edge masks.
        if rows.end == rows.start + 1 && rows.start / 64 < self.0.len() {
            return self.set_row(rows.start);
        }
        if rows.is_empty() {
            return;
        }
        let (wa, wb) = (rows.start / 64, (rows.end - 1) / 64);
        let head = !0u64 << (rows.start % 64);
        let tail = !0u64 >> (63 - (rows.end - 1) % 64);
        let old = self.0.len();
        if old > wb {
            or_range(&mut self.0, wa, wb, head, tail);
            return;
        }
        // A range inside the first word past the end (a small table's rows, marked after
        // the clear at the start of Sync): one push. The general growth below, with its
        // two `extend`s and edge fix-ups, costs several times that.
        if wa == wb && wa == old {
            self.0.push(head & tail);
            return;
        }
        // Growing: words before the range stay zero, new words in it start all ones and
        // get their edges trimmed; words that already existed are or-ed.
        let start = wa.max(old);
        // `extend(repeat_n)` (trusted length) compiles to a fill loop LLVM vectorises;
        // `resize` stores one word per iteration.
        self.0
            .extend(std::iter::repeat_n(0, start - old.min(start)));
        self.0.extend(std::iter::repeat_n(!0, wb + 1 - start));
        if start == wa {
            self.0[wa] &= head;
        }
        self.0[wb] &= tail;
        if wa < old {
            or_range(&mut self.0, wa, old - 1, head, !0);
        }
    }

    /// Sets or clears `row`.
    #[inline]
    fn put(&mut self, row: usize, on: bool) {
        if on {
            if self.0.len() <= row / 64 {
                self.0.resize(row / 64 + 1, 0);
            }
            self.0[row / 64] |= 1 << (row % 64);
        } else if let Some(w) = self.0.get_mut(row / 64) {
            *w &= !(1 << (row % 64));
        }
    }

    /// The bits of a column after `swap_remove(row)` on a column of `len` rows.
    #[inline]
    fn swap_remove(&mut self, row: usize, len: usize) {
        if self.0.is_empty() {
            return;
        }
        let last = len - 1;
        let moved = self.get(last);
        self.put(row, moved);
        self.put(last, false);
    }

    /// Row `inv[p]` takes row `p`'s bit (`inv` the inverse of a permutation of the
    /// column's rows: where each row goes): nothing to do when no row or every row is set
    /// (a column written whole, the usual case), else one pass over the set bits only,
    /// scattering into `scratch`, which then holds the old words.
    fn permute(&mut self, inv: &[u32], scratch: &mut Vec<u64>) {
        let n = inv.len();
        if self.0.is_empty() || self.all_set(n) {
            return;
        }
        scratch.clear();
        scratch.resize(n.div_ceil(64), 0);
        for (w, &word) in self.0.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                let p = w * 64 + rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let to = inv[p] as usize;
                scratch[to / 64] |= 1 << (to % 64);
            }
        }
        std::mem::swap(&mut self.0, scratch);
    }

    /// Whether rows `0..n` are all set.
    fn all_set(&self, n: usize) -> bool {
        let (full, rest) = (n / 64, n % 64);
        self.0.len() >= n.div_ceil(64)
            && self.0[..full].iter().all(|&w| w == !0)
            && (rest == 0 || self.0[full] & ((1 << rest) - 1) == (1 << rest) - 1)
    }

    /// Marks nothing (capacity kept).
    #[inline]
    fn clear(&mut self) {
        self.0.clear();
    }

    /// Sets every row `other` sets (a word at a time).
    fn or(&mut self, other: &Bits) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (w, &o) in self.0.iter_mut().zip(&other.0) {
            *w |= o;
        }
    }

    /// How many rows are set.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// Sets words `wa..=wb` of `words` (all present): `head` masks the first, `tail` the last.
#[inline]
fn or_range(words: &mut [u64], wa: usize, wb: usize, head: u64, tail: u64) {
    if wa == wb {
        words[wa] |= head & tail;
    } else {
        words[wa] |= head;
        words[wa + 1..wb].fill(!0);
        words[wb] |= tail;
    }
}

/// Whether bit `row` of `words` is set (bits past the end are zero).
#[inline]
pub(crate) fn test(words: &[u64], row: usize) -> bool {
    words
        .get(row / 64)
        .is_some_and(|w| w & (1 << (row % 64)) != 0)
}

/// The marks of one column: changed rows, and added rows (a subset of the changed ones).
#[derive(Default, Debug, PartialEq, Eq)]
pub(crate) struct ColumnMarks {
    pub(crate) changed: Bits,
    pub(crate) added: Bits,
}

impl Clone for ColumnMarks {
    fn clone(&self) -> Self {
        ColumnMarks {
            changed: self.changed.clone(),
            added: self.added.clone(),
        }
    }
    fn clone_from(&mut self, src: &Self) {
        self.changed.clone_from(&src.changed);
        self.added.clone_from(&src.added);
    }
}

impl ColumnMarks {
    /// `(changed, added)` of `row`.
    #[inline]
    fn get(&self, row: usize) -> (bool, bool) {
        (self.changed.get(row), self.added.get(row))
    }

    /// Whether no row is marked: nothing to move, clear or find.
    #[inline]
    fn is_clear(&self) -> bool {
        self.changed.words().is_empty()
    }

    #[inline]
    fn swap_remove(&mut self, row: usize, len: usize) {
        if !self.is_clear() {
            self.changed.swap_remove(row, len);
            self.added.swap_remove(row, len);
        }
    }
}

/// Changed rows of many runs, as [`TypeMarks::mark_changed`] takes one: runs inside one
/// word of marks (short runs, the shape of a query loop that writes some rows and skips
/// others) are gathered while they stay in the same word of the same column and stored
/// once, instead of one range store each (a range costs several times a word's `or`).
/// Longer runs are marked at once. The last word is stored when this is dropped, so a
/// merge that panics after its rows were marked leaves them marked.
pub(crate) struct ChangedWords<'m> {
    marks: &'m mut TypeMarks,
    col: usize,
    word: usize,
    /// The word's rows gathered so far (0: none).
    bits: u64,
}

impl<'m> ChangedWords<'m> {
    /// Gathers changed rows into `marks`.
    pub(crate) fn new(marks: &'m mut TypeMarks) -> Self {
        ChangedWords {
            marks,
            col: 0,
            word: 0,
            bits: 0,
        }
    }

    /// Rows `rows` of column `col` were written. Inlined into the caller's loop: a run
    /// in the word being gathered costs a few instructions.
    #[inline(always)]
    pub(crate) fn mark(&mut self, col: usize, rows: Range<usize>) {
        if rows.is_empty() {
            return;
        }
        let word = rows.start / 64;
        if word != (rows.end - 1) / 64 {
            return self.marks.mark_changed(col, rows);
        }
        let mask = (!0u64 >> (64 - rows.len())) << (rows.start % 64);
        if self.bits != 0 && (col, word) == (self.col, self.word) {
            self.bits |= mask;
            return;
        }
        self.next_word(col, word, mask);
    }

    /// Stores the word gathered so far and starts gathering `word` of `col`.
    #[inline(never)]
    fn next_word(&mut self, col: usize, word: usize, bits: u64) {
        self.store();
        (self.col, self.word, self.bits) = (col, word, bits);
    }

    /// Stores the word gathered last (if any).
    #[inline]
    fn store(&mut self) {
        let bits = std::mem::take(&mut self.bits);
        if bits != 0 {
            self.marks.mark_changed_word(self.col, self.word, bits);
        }
    }
}

impl Drop for ChangedWords<'_> {
    fn drop(&mut self) {
        self.store();
    }
}

/// The marks of every column of one type, and whether any is set.
///
/// With one stage, `columns` is all there is: the previous Sync's marks (and those made
/// since, between frames), cleared at the start of the next Sync. With `S` stages a
/// system runs once every `S` stage-Syncs, so what it must see is what the last `S`
/// Syncs did: `layers` keeps one layer per stage (what that stage's most recent Sync
/// marked), stage `j`'s Sync clears layer `j` and marks into it, and `columns` is the
/// union of the layers, kept so at every mark and every row move, and rebuilt when a
/// layer is cleared. Readers (`Changed`, `Added`, saves, `is_added`) read `columns` only.
#[derive(Default, Debug, PartialEq, Eq)]
pub(crate) struct TypeMarks {
    /// Column `k`'s marks (one per column, always); with several stages, the union of
    /// the layers. Outside `storage/`, read through [`column`](Self::column).
    pub(in crate::storage) columns: Vec<ColumnMarks>,
    /// Some column may have a mark: [`clear`](Self::clear) has work to do.
    dirty: bool,
    /// With several stages: the layers, one per stage (`None` with one stage, and until
    /// the first Sync of a multi-stage runtime).
    layers: Option<Box<Layers>>,
}

/// Per stage, what its most recent Sync marked; the stage whose Sync was last also
/// holds the marks made since (between frames).
#[derive(Default, Debug, PartialEq, Eq)]
struct Layers {
    stages: Vec<Layer>,
    /// The stage whose Sync was last: marks go to its layer.
    current: usize,
}

impl Clone for Layers {
    fn clone(&self) -> Self {
        Layers {
            stages: self.stages.clone(),
            current: self.current,
        }
    }
    fn clone_from(&mut self, src: &Self) {
        self.stages.clone_from(&src.stages);
        self.current = src.current;
    }
}

/// One stage's layer: a mark set per column, and whether any is set.
#[derive(Default, Debug, PartialEq, Eq)]
struct Layer {
    columns: Vec<ColumnMarks>,
    dirty: bool,
}

impl Clone for Layer {
    fn clone(&self) -> Self {
        Layer {
            columns: self.columns.clone(),
            dirty: self.dirty,
        }
    }
    fn clone_from(&mut self, src: &Self) {
        self.columns.clone_from(&src.columns);
        self.dirty = src.dirty;
    }
}

impl Clone for TypeMarks {
    fn clone(&self) -> Self {
        TypeMarks {
            columns: self.columns.clone(),
            dirty: self.dirty,
            layers: self.layers.clone(),
        }
    }
    fn clone_from(&mut self, src: &Self) {
        self.columns.clone_from(&src.columns);
        self.dirty = src.dirty;
        self.layers.clone_from(&src.layers);
    }
}

/// `f` on every mark set of a type: the union and, with several stages, each layer.
macro_rules! each_set {
    ($marks:expr, |$cols:ident| $body:expr) => {{
        {
            let $cols = &mut $marks.columns;
            $body;
        }
        if let Some(layers) = $marks.layers.as_deref_mut() {
            for layer in &mut layers.stages {
                let $cols = &mut layer.columns;
                $body;
            }
        }
    }};
}

/// `f` on the mark sets a new mark goes to: the union and, with several stages, the
/// current stage's layer (marked dirty).
macro_rules! marked_sets {
    ($marks:expr, |$cols:ident| $body:expr) => {{
        $marks.dirty = true;
        {
            let $cols = &mut $marks.columns;
            $body;
        }
        if let Some(layers) = $marks.layers.as_deref_mut() {
            let layer = &mut layers.stages[layers.current];
            layer.dirty = true;
            let $cols = &mut layer.columns;
            $body;
        }
    }};
}

impl TypeMarks {
    /// Whether a row of column `col` is marked changed (in the union); `false` for a
    /// column these marks do not cover.
    #[inline]
    pub(crate) fn is_changed(&self, col: usize) -> bool {
        self.columns.get(col).is_some_and(|c| !c.is_clear())
    }

    /// Column `col`'s marks (the union of the layers, with several stages).
    #[inline]
    pub(crate) fn column(&self, col: usize) -> &ColumnMarks {
        &self.columns[col]
    }

    /// Marks made of saved words, one `(changed, added)` pair per column; checked: no bit
    /// at or past a column's `rows`, added rows among the changed ones. `Err` says what
    /// is wrong. (A save holds the union of a multi-stage world's layers; a runtime's save
    /// the layers too, [`with_layers`](Self::with_layers). With the union alone, the first
    /// Sync after a load takes it for the previous stage's, see
    /// [`begin_stage`](Self::begin_stage).)
    pub(crate) fn from_words(
        columns: Vec<(Vec<u64>, Vec<u64>)>,
        rows: impl Fn(usize) -> usize,
    ) -> Result<TypeMarks, String> {
        let mut dirty = false;
        let mut out = Vec::with_capacity(columns.len());
        for (col, (changed, added)) in columns.into_iter().enumerate() {
            let n = rows(col);
            for words in [&changed, &added] {
                let past = words
                    .iter()
                    .enumerate()
                    .any(|(i, &w)| w != 0 && 64 * i + (64 - w.leading_zeros() as usize) > n);
                if past {
                    return Err(format!("column {col}: change marks past its {n} rows"));
                }
            }
            let subset = added
                .iter()
                .enumerate()
                .all(|(i, &a)| a & !changed.get(i).copied().unwrap_or(0) == 0);
            if !subset || (changed.is_empty() && !added.is_empty()) {
                return Err(format!("column {col}: added marks on unchanged rows"));
            }
            dirty |= !changed.is_empty();
            out.push(ColumnMarks {
                changed: Bits(changed),
                added: Bits(added),
            });
        }
        Ok(TypeMarks {
            columns: out,
            dirty,
            layers: None,
        })
    }

    /// With several stages: the stage count, the stage new marks go to, and each
    /// stage's layer (one [`ColumnMarks`] per column), for a save (format version 5).
    pub(crate) fn layers(&self) -> Option<(usize, impl Iterator<Item = &[ColumnMarks]>)> {
        let layers = self.layers.as_deref()?;
        let columns = layers.stages.iter().map(|l| &l.columns[..]);
        Some((layers.current, columns))
    }

    /// These marks (the union, [`from_words`](Self::from_words)) with the layers a save
    /// held: `current`, and per stage one `(changed, added)` pair per column. Checked as
    /// `from_words` checks the union, and that the union is what the layers add up to.
    /// The first Sync of a runtime with another stage count takes the union for the
    /// previous stage's, as with no layers (see [`begin_stage`](Self::begin_stage)).
    pub(crate) fn with_layers(
        mut self,
        current: usize,
        stages: Vec<Vec<(Vec<u64>, Vec<u64>)>>,
        rows: impl Fn(usize) -> usize,
    ) -> Result<TypeMarks, String> {
        if stages.len() < 2 || current >= stages.len() {
            return Err(format!(
                "stage {current} of {} stages: not a stage of a multi-stage frame",
                stages.len()
            ));
        }
        let mut layers = Layers {
            stages: Vec::with_capacity(stages.len()),
            current,
        };
        let mut union: Vec<ColumnMarks> = self
            .columns
            .iter()
            .map(|_| ColumnMarks::default())
            .collect();
        for (k, columns) in stages.into_iter().enumerate() {
            if columns.len() != self.columns.len() {
                return Err(format!(
                    "stage {k}'s change marks have {} columns, not {}",
                    columns.len(),
                    self.columns.len()
                ));
            }
            let layer = TypeMarks::from_words(columns, &rows)
                .map_err(|e| format!("stage {k}'s change marks: {e}"))?;
            for (u, m) in union.iter_mut().zip(&layer.columns) {
                u.changed.or(&m.changed);
                u.added.or(&m.added);
            }
            layers.stages.push(Layer {
                columns: layer.columns,
                dirty: layer.dirty,
            });
        }
        let same = |a: &Bits, b: &Bits| {
            let n = a.0.len().max(b.0.len());
            (0..n).all(|i| a.0.get(i).unwrap_or(&0) == b.0.get(i).unwrap_or(&0))
        };
        for (col, (u, m)) in union.iter().zip(&self.columns).enumerate() {
            if !same(&u.changed, &m.changed) || !same(&u.added, &m.added) {
                return Err(format!(
                    "column {col}: the change marks are not those of the stages together"
                ));
            }
        }
        self.layers = Some(Box::new(layers));
        Ok(self)
    }

    /// Forgets the layers (the marks stay, as their union): what a load that does not
    /// restore them leaves.
    pub(crate) fn drop_layers(&mut self) {
        self.layers = None;
    }

    /// A new column with no marks.
    pub(crate) fn add_column(&mut self) {
        each_set!(self, |cols| cols.push(ColumnMarks::default()));
    }

    /// Drops columns `n..`.
    pub(crate) fn truncate(&mut self, n: usize) {
        each_set!(self, |cols| cols.truncate(n));
    }

    /// Rows `rows` of column `col` were written (merged into, or replaced).
    #[inline]
    pub(crate) fn mark_changed(&mut self, col: usize, rows: Range<usize>) {
        if !rows.is_empty() {
            marked_sets!(self, |cols| cols[col].changed.set_range(rows.clone()));
        }
    }

    /// The rows of column `col` whose bits are set in `rows` (bit `i` for row
    /// `64 * word + i`) were written: [`mark_changed`](Self::mark_changed) for a word of
    /// scattered rows (the keyed fold gathers its rows' bits a word at a time).
    #[inline]
    pub(crate) fn mark_changed_word(&mut self, col: usize, word: usize, rows: u64) {
        marked_sets!(self, |cols| {
            let words = &mut cols[col].changed.0;
            // The next word past the end (marks grow row by row after Sync's clear): a
            // push, not `resize`'s fill.
            if words.len() == word {
                words.push(rows);
            } else {
                if words.len() < word {
                    words.resize(word + 1, 0);
                }
                words[word] |= rows;
            }
        });
    }

    /// Row `row` of column `col` as `mark` says: bit 0 changed, bit 1 added (changed
    /// too); 0 marks nothing.
    #[inline]
    pub(crate) fn mark_row(&mut self, col: usize, row: usize, mark: u8) {
        if mark == 0 {
            return;
        }
        marked_sets!(self, |cols| {
            let m = &mut cols[col];
            m.changed.set_row(row);
            if mark & 0b10 != 0 {
                m.added.set_row(row);
            }
        });
    }

    /// Rows `rows` of column `col` gained the component (changed too).
    pub(crate) fn mark_added(&mut self, col: usize, rows: Range<usize>) {
        if !rows.is_empty() {
            marked_sets!(self, |cols| {
                let m = &mut cols[col];
                m.changed.set_range(rows.clone());
                m.added.set_range(rows.clone());
            });
        }
    }

    /// Unmarks everything: O(columns) when something was marked, O(1) otherwise.
    pub(crate) fn clear(&mut self) {
        if std::mem::take(&mut self.dirty) {
            clear_all(&mut self.columns);
        }
    }

    /// The start of stage `stage`'s Sync, of `stages` a frame: with one stage, forgets
    /// every mark ([`clear`](Self::clear)); with several, forgets what this stage's
    /// previous Sync marked (its layer) and makes it the layer new marks go to. The union
    /// is rebuilt only if the layer had a mark: O(1) for a type no one marked, else
    /// O(columns × words × stages).
    ///
    /// The first multi-stage Sync (or one after the stage count changed, or after a load
    /// that did not restore layers of this stage count) takes every mark there is for the
    /// previous stage's: made after it, so each system sees them once more, as marks made
    /// between frames.
    pub(crate) fn begin_stage(&mut self, stage: usize, stages: usize) {
        if stages <= 1 {
            self.layers = None;
            return self.clear();
        }
        let layers = self.layers.get_or_insert_with(Default::default);
        if layers.stages.len() != stages {
            let prev = (stage + stages - 1) % stages;
            let n = self.columns.len();
            layers.stages = (0..stages)
                .map(|_| Layer {
                    columns: (0..n).map(|_| ColumnMarks::default()).collect(),
                    dirty: false,
                })
                .collect();
            layers.stages[prev] = Layer {
                columns: self.columns.clone(),
                dirty: self.dirty,
            };
        }
        layers.current = stage;
        let layer = &mut layers.stages[stage];
        if !std::mem::take(&mut layer.dirty) {
            return;
        }
        clear_all(&mut layer.columns);
        clear_all(&mut self.columns);
        self.dirty = false;
        for layer in layers.stages.iter().filter(|l| l.dirty) {
            for (u, m) in self.columns.iter_mut().zip(&layer.columns) {
                u.changed.or(&m.changed);
                u.added.or(&m.added);
            }
            self.dirty = true;
        }
    }

    /// Follows a permutation of column `col`'s rows, given by its inverse (row `p`'s
    /// marks go to row `inv[p]`); `scratch` is reused.
    pub(crate) fn permute(&mut self, col: usize, inv: &[u32], scratch: &mut Vec<u64>) {
        each_set!(self, |cols| {
            let c = &mut cols[col];
            if !c.is_clear() {
                for bits in [&mut c.changed, &mut c.added] {
                    bits.permute(inv, scratch);
                }
            }
        });
    }

    /// Follows `swap_remove(row)` on column `col` of `len` rows.
    #[inline]
    pub(crate) fn swap_remove(&mut self, col: usize, row: usize, len: usize) {
        each_set!(self, |cols| cols[col].swap_remove(row, len));
    }

    /// Follows moving row `row` of column `src` (of `src_len` rows) to the end of column
    /// `dst` (of `dst_len` rows) by swap-remove: its marks go with it.
    #[inline]
    pub(crate) fn move_row(
        &mut self,
        src: usize,
        row: usize,
        src_len: usize,
        dst: usize,
        dst_len: usize,
    ) {
        each_set!(self, |cols| move_row(cols, src, row, src_len, dst, dst_len));
    }
}

/// Unmarks every column of `cols` (capacity kept).
fn clear_all(cols: &mut [ColumnMarks]) {
    for m in cols {
        m.changed.clear();
        m.added.clear();
    }
}

/// [`TypeMarks::move_row`] on one mark set.
#[inline]
fn move_row(
    cols: &mut [ColumnMarks],
    src: usize,
    row: usize,
    src_len: usize,
    dst: usize,
    dst_len: usize,
) {
    let s = &mut cols[src];
    if s.is_clear() {
        return;
    }
    let (changed, added) = s.get(row);
    s.swap_remove(row, src_len);
    let d = &mut cols[dst];
    d.changed.put(dst_len, changed);
    d.added.put(dst_len, added);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitvec::order::Lsb0;
    use bitvec::slice::BitSlice;

    /// Every range edge case of `set_range` (inside existing words, growing, both, gaps)
    /// against a plain `Vec<bool>`, read back through bitvec's view.
    #[test]
    fn set_range_agrees_with_a_bool_model() {
        let edges = [0, 1, 5, 63, 64, 65, 127, 128, 130, 191, 192, 250];
        // Under Miri (2+ minutes with every pair): starts at the first word's edges, ends
        // on both sides of each word boundary.
        let (starts, ends): (&[usize], &[usize]) = if cfg!(miri) {
            (&edges[..4], &[1, 63, 64, 65, 128, 250])
        } else {
            (&edges, &edges)
        };
        for &a1 in starts {
            for &b1 in ends {
                for &(a2, b2) in &[
                    (0, 0),
                    (3, 70),
                    (64, 128),
                    (100, 260),
                    (200, 201),
                    (100, 101),
                ] {
                    let mut bits = Bits::default();
                    let mut model = vec![false; 300];
                    for (a, b) in [(a1, b1), (a2, b2)] {
                        if a < b {
                            bits.set_range(a..b);
                            model[a..b].iter_mut().for_each(|x| *x = true);
                        }
                    }
                    let view = BitSlice::<u64, Lsb0>::from_slice(bits.words());
                    for (row, &want) in model.iter().enumerate() {
                        assert_eq!(bits.get(row), want, "{a1}..{b1}, {a2}..{b2}: {row}");
                        assert_eq!(view.get(row).is_some_and(|x| *x), want);
                    }
                    let last = model.iter().rposition(|&x| x).map_or(0, |r| r / 64 + 1);
                    assert_eq!(bits.words().len(), last, "grown just far enough");
                }
            }
        }
    }

    /// `mark_row` against the marks' meaning (0 nothing, 1 changed, 2 and 3 added and
    /// changed), on rows in words that exist and past the end (growth), and that it is
    /// what `mark_added` / `mark_changed` make of one row.
    #[test]
    fn mark_row_marks_as_a_record_says() {
        for mark in 0..4u8 {
            for row in [0, 5, 63, 64, 200] {
                let mut m = TypeMarks::default();
                m.add_column();
                m.add_column();
                m.mark_row(1, 70, 0b11); // column 1 has a word or two already
                m.mark_row(1, row, mark);
                m.mark_row(0, row, mark);
                let mut want = TypeMarks::default();
                want.add_column();
                want.add_column();
                want.mark_added(1, 70..71);
                for col in [0, 1] {
                    match mark {
                        0 => {}
                        1 => want.mark_changed(col, row..row + 1),
                        _ => want.mark_added(col, row..row + 1),
                    }
                }
                want.dirty = true;
                for col in [0, 1] {
                    assert_eq!(
                        m.columns[col].get(row),
                        want.columns[col].get(row),
                        "mark {mark}, row {row}, column {col}"
                    );
                }
                assert_eq!(m, want, "mark {mark}, row {row}");
            }
        }
    }

    /// `ChangedWords` marks what one `mark_changed` per run marks: short runs
    /// gathered into words (in one column and across columns, in and out of order), runs
    /// across word edges, empty runs and growth, with one stage and with layers.
    #[test]
    fn runs_gathered_into_words_mark_what_each_run_marks() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((seed >> 33) % n) as usize
        };
        for layered in [false, true] {
            for round in 0..if cfg!(miri) { 3 } else { 200 } {
                let mut runs = Vec::new();
                let mut row = 0;
                for _ in 0..next(40) {
                    let col = next(3);
                    // Mostly increasing rows (a query loop), sometimes a jump back.
                    row = if next(8) == 0 {
                        next(300)
                    } else {
                        row + next(20)
                    };
                    let len = [0, 1, 2, 5, 63, 64, 70][next(7)];
                    runs.push((col, row..row + len));
                    row += len;
                }
                let (mut got, mut want) = (TypeMarks::default(), TypeMarks::default());
                for m in [&mut got, &mut want] {
                    for _ in 0..3 {
                        m.add_column();
                    }
                    m.mark_changed(1, 10..12);
                    if layered {
                        m.begin_stage(1, 2);
                    }
                }
                let mut words = ChangedWords::new(&mut got);
                for (col, rows) in &runs {
                    words.mark(*col, rows.clone());
                }
                drop(words);
                for (col, rows) in &runs {
                    want.mark_changed(*col, rows.clone());
                }
                assert_eq!(got, want, "round {round}, layers {layered}: {runs:?}");
            }
        }
    }

    #[test]
    fn ranges_rows_and_the_bitvec_view_agree() {
        let mut b = Bits::default();
        b.set_range(3..3);
        assert!(b.words().is_empty(), "an empty range allocates nothing");
        b.set_range(60..130);
        b.set_range(5..6);
        assert_eq!(b.words().len(), 3);
        let view = BitSlice::<u64, Lsb0>::from_slice(b.words());
        for row in 0..200 {
            let want = row == 5 || (60..130).contains(&row);
            assert_eq!(b.get(row), want, "{row}");
            assert_eq!(view.get(row).is_some_and(|x| *x), want, "{row}");
        }
        assert_eq!(b.count(), 71);
        assert_eq!(view.count_ones(), 71);
    }

    #[test]
    fn permuted_rows_take_their_bits_along() {
        let mut scratch = Vec::new();
        for (set, perm) in [
            (vec![0, 3], vec![3, 2, 1, 0]),
            (vec![1, 64, 70], (0..71).rev().collect::<Vec<u32>>()),
            (vec![2], vec![1, 2, 0]),
            (vec![], vec![1, 0]),
            // Every row set: the fast path.
            ((0..70).collect(), (0..70).rev().collect()),
            ((0..64).collect(), (0..64).rev().collect()),
        ] {
            let mut bits = Bits::default();
            for &r in &set {
                bits.put(r, true);
            }
            let before: Vec<bool> = (0..perm.len()).map(|r| bits.get(r)).collect();
            let mut inv = vec![0; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p as usize] = i as u32;
            }
            bits.permute(&inv, &mut scratch);
            let after: Vec<bool> = (0..perm.len()).map(|r| bits.get(r)).collect();
            let want: Vec<bool> = perm.iter().map(|&p| before[p as usize]).collect();
            assert_eq!(after, want, "set {set:?}");
            assert_eq!(bits.count(), set.len());
        }
    }

    /// The words of every mark set of `m`: the union's, then each layer's.
    fn words(m: &TypeMarks) -> Vec<(Vec<u64>, Vec<u64>)> {
        let pair = |c: &ColumnMarks| (c.changed.words().to_vec(), c.added.words().to_vec());
        let mut all: Vec<_> = m.columns.iter().map(pair).collect();
        if let Some((_, layers)) = m.layers() {
            all.extend(layers.flat_map(|l| l.iter().map(pair)));
        }
        all
    }

    /// Layers made by two stages' Syncs come back from their words as they were (what a
    /// version-5 save restores), and words that do not hold together are refused: a
    /// union that is not the layers together, a stage past the count, one stage, a
    /// layer with another number of columns, bits past a column's rows.
    #[test]
    fn layers_rebuilt_from_their_words_are_checked() {
        let mut m = TypeMarks::default();
        m.add_column();
        m.add_column();
        m.begin_stage(0, 2);
        m.mark_changed(0, 3..70);
        m.mark_added(1, 2..3);
        m.begin_stage(1, 2);
        m.mark_changed(0, 80..81);
        let union: Vec<_> = words(&m)[..2].to_vec();
        let (current, layers) = m.layers().unwrap();
        assert_eq!(current, 1);
        let layers: Vec<Vec<_>> = layers
            .map(|l| {
                l.iter()
                    .map(|c| (c.changed.words().to_vec(), c.added.words().to_vec()))
                    .collect()
            })
            .collect();
        let rows = |_| 100;
        let load = |union: &[(Vec<u64>, Vec<u64>)], current, layers: Vec<Vec<_>>| {
            TypeMarks::from_words(union.to_vec(), rows)
                .unwrap()
                .with_layers(current, layers, rows)
        };
        let back = load(&union, 1, layers.clone()).expect("the layers a Sync made");
        assert_eq!(words(&back), words(&m));
        assert_eq!(back.layers().unwrap().0, 1);
        // Stage 0's next Sync forgets stage 0's layer in both.
        let mut back = back;
        m.begin_stage(0, 2);
        back.begin_stage(0, 2);
        assert_eq!(words(&back), words(&m));
        assert!(m.columns[0].changed.get(80) && !m.columns[0].changed.get(3));

        let mut more = union.clone();
        more[1].0 = vec![1 << 9];
        more[1].1 = vec![];
        let broken: [(&str, Result<TypeMarks, String>); 5] = [
            ("not those of the stages", load(&more, 1, layers.clone())),
            ("stage 2 of 2", load(&union, 2, layers.clone())),
            ("of 1 stages", load(&union, 0, layers[..1].to_vec())),
            ("1 columns, not 2", {
                let mut l = layers.clone();
                l[0].pop();
                load(&union, 1, l)
            }),
            ("past its 100 rows", {
                let mut l = layers.clone();
                l[1][1].0 = vec![0, 1 << 60];
                load(&union, 1, l)
            }),
        ];
        for (says, got) in broken {
            match got {
                Err(e) => assert!(e.contains(says), "{says}: {e}"),
                Ok(_) => panic!("{says}: accepted"),
            }
        }
    }

    #[test]
    fn swap_remove_moves_the_last_row_and_clears_its_place() {
        let mut m = TypeMarks::default();
        m.add_column();
        m.add_column();
        // Column 0 has 10 rows; rows 2 and 9 changed, 9 also added.
        m.mark_changed(0, 2..3);
        m.mark_added(0, 9..10);
        m.swap_remove(0, 2, 10); // row 9 moves to 2
        let c = &m.columns[0];
        assert_eq!((c.changed.get(2), c.added.get(2)), (true, true));
        assert!(!c.changed.get(9) && !c.added.get(9));
        assert_eq!(c.changed.count(), 1);
        // Move row 2 (now changed+added) of column 0 (9 rows) to the end of column 1 (4
        // rows): row 8 of column 0 (unmarked) fills the hole.
        m.move_row(0, 2, 9, 1, 4);
        assert_eq!(m.columns[0].changed.count(), 0);
        assert!(m.columns[1].changed.get(4) && m.columns[1].added.get(4));
        assert_eq!(m.columns[1].changed.count(), 1);
        m.clear();
        assert!(m.columns.iter().all(|c| c.is_clear()));
    }
}
