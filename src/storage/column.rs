//! Per-type columns: one `Vec<C>` per table that holds `C`.

use std::any::{Any, type_name};
use std::collections::VecDeque;
use std::fmt;

use super::marks::TypeMarks;
use crate::checksum::{Checksum, Checksummer, Version};
use crate::component::Component;
use crate::erased::Erased;
use crate::savefile::{ColumnError, Encoding, SaveSource};
use crate::stamp::{Stamp, same};

/// Per-type operations (opt-ins) that need more than [`Component`]'s bounds, recorded by an opt-in
/// ([`World::snapshotting`](crate::World::snapshotting),
/// [`World::checksumming`](crate::World::checksumming)) as plain `fn` pointers.
pub(crate) struct TypeOps<C> {
    /// Clones column `src` into `dst`, reusing `dst`'s memory (`clone_from`).
    clone: Option<CloneColumn<C>>,
    /// Writes one value into a checksum.
    checksum: Option<fn(&C, &mut Checksummer)>,
    /// The [lane digest](crate::checksum::digest_values) of a block of values, set with
    /// `checksum`: the value's `Checksum` inlined into the lanes' loop.
    digest: Option<fn(Version, &[C]) -> u64>,
    /// Formats one value (`Debug`).
    debug: Option<DebugFn<C>>,
    /// Encodes and decodes values for save files (serde).
    serde: Option<SaveFns<C>>,
}

/// A type's save-file codec, in `encoding`: `encode(values, out)` appends the values;
/// `bytes(values)` are their bytes, for plain data (written without a copy);
/// `decode(src, len, n, out)` reads a column of `len` bytes and pushes its `n` values.
pub(crate) struct SaveFns<T> {
    pub(crate) encoding: Encoding,
    pub(crate) encode: fn(&[T], &mut Vec<u8>) -> Result<(), String>,
    pub(crate) bytes: Option<BytesFn<T>>,
    pub(crate) decode: DecodeFn<T>,
}

/// `fn(values) -> their bytes`: see [`SaveFns`].
type BytesFn<T> = fn(&[T]) -> &[u8];

/// `fn(src, len, n, out)`: see [`SaveFns`].
type DecodeFn<T> = fn(&mut SaveSource<'_>, u64, usize, &mut Vec<T>) -> Result<(), ColumnError>;

impl<T> Clone for SaveFns<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for SaveFns<T> {}

impl<T: serde::Serialize + serde::de::DeserializeOwned> SaveFns<T> {
    /// Values through serde.
    pub(crate) fn of() -> Self {
        SaveFns {
            encoding: Encoding::Serde,
            encode: crate::savefile::encode_values::<T>,
            bytes: None,
            decode: crate::savefile::decode_serde::<T>,
        }
    }
}

impl<T: bytemuck::Pod> SaveFns<T> {
    /// Values as plain data.
    pub(crate) fn pod() -> Self {
        SaveFns {
            encoding: Encoding::plain(std::mem::size_of::<T>()),
            encode: crate::savefile::encode_pod::<T>,
            bytes: Some(bytemuck::cast_slice::<T, u8>),
            decode: crate::savefile::decode_pod::<T>,
        }
    }
}

/// `fn(dst, src)`: see [`clone_column`].
type CloneColumn<C> = fn(&mut Vec<C>, &[C]);

/// What a snapshot keeps of one type: its columns, their change marks, and the
/// [stamp](crate::stamp) of each column's contents when it was copied.
type Saved<C> = (Vec<Vec<C>>, TypeMarks, Vec<u64>);

impl<C> Default for TypeOps<C> {
    fn default() -> Self {
        TypeOps {
            clone: None,
            checksum: None,
            digest: None,
            debug: None,
            serde: None,
        }
    }
}

/// Clones column `src` into `dst` reusing `dst`'s memory, down to each value's
/// (`Clone::clone_from` on the rows both have): with the capacity, no allocation, and a
/// `memcpy` for `Copy` types.
fn clone_column<C: Clone>(dst: &mut Vec<C>, src: &[C]) {
    src.clone_into(dst);
}

/// Makes `dst` (with the stamps of what it holds, `dst_stamps`) equal to `src` (with
/// `src_stamps`), copying only the columns whose stamps differ: a snapshot's save, and a
/// restore. Vectors `dst` has are reused.
fn copy_changed<C, S: Default + Named>(
    clone: CloneColumn<C>,
    dst: &mut Vec<Vec<C>>,
    dst_stamps: &mut Vec<S>,
    src: &[Vec<C>],
    src_stamps: impl Iterator<Item = u64>,
) {
    dst.truncate(src.len());
    dst_stamps.truncate(src.len());
    for (k, (column, stamp)) in src.iter().zip(src_stamps).enumerate() {
        if k == dst.len() {
            dst.push(Vec::new());
            dst_stamps.push(S::default());
        }
        if !same(dst_stamps[k].named(), stamp) {
            clone(&mut dst[k], column);
            dst_stamps[k].name(stamp);
        }
    }
}

/// Where [`copy_changed`] reads and writes the destination's stamps: a snapshot's plain
/// numbers, or a world's [`Stamp`]s.
trait Named {
    /// The stamp of what it holds (0: unnamed).
    fn named(&mut self) -> u64;
    /// It now holds the contents named `stamp`.
    fn name(&mut self, stamp: u64);
}

impl Named for u64 {
    fn named(&mut self) -> u64 {
        *self
    }
    fn name(&mut self, stamp: u64) {
        *self = stamp;
    }
}

impl Named for Stamp {
    fn named(&mut self) -> u64 {
        self.peek()
    }
    fn name(&mut self, stamp: u64) {
        self.set(stamp);
    }
}

fn checksum_value<C: Checksum>(v: &C, h: &mut Checksummer) {
    v.checksum(h);
}

/// The lane digest of a block of `C`s (see [`TypeOps::digest`]).
fn digest_block<C: Checksum>(v: Version, values: &[C]) -> u64 {
    crate::checksum::digest_values(v, values, C::checksum)
}

/// A `Debug` formatter of `T`, as a plain `fn` pointer (kept by an opt-in).
pub(crate) type DebugFn<T> = fn(&T, &mut fmt::Formatter<'_>) -> fmt::Result;

/// The `Debug` formatter of `T`, as a [`DebugFn`].
pub(crate) fn debug_fn<T: fmt::Debug>() -> DebugFn<T> {
    |v, f| fmt::Debug::fmt(v, f)
}

/// Displays a value through a [`DebugFn`].
pub(crate) struct Show<'a, T>(pub(crate) &'a T, pub(crate) DebugFn<T>);

impl<T> fmt::Display for Show<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.1)(self.0, f)
    }
}

/// Everything the storage keeps for one component type `C`: its columns, plus the value in
/// flight during a structural change. It knows nothing of merges or outputs.
pub(crate) struct TypedColumns<C: Component> {
    /// Column `k` belongs to the `k`-th table (in creation order) that holds `C`.
    columns: Vec<Vec<C>>,
    /// Change marks, one entry per column, row-aligned with it (see `storage::marks`).
    marks: TypeMarks,
    /// The [stamp](crate::stamp) of each column's contents: every method below that
    /// changes a column, or lends it mutably, touches its stamp.
    stamps: Vec<Stamp>,
    /// A value on its way into a column (insert or spawn), set by `stage`.
    staged: Option<C>,
    /// Values removed by structural changes, dropped by `flush_graveyard` once the
    /// change is complete, so a panicking `Drop` never leaves a table half-moved.
    graveyard: Vec<C>,
    ops: TypeOps<C>,
}

impl<C: Component> Default for TypedColumns<C> {
    fn default() -> Self {
        TypedColumns {
            columns: Vec::new(),
            marks: TypeMarks::default(),
            stamps: Vec::new(),
            staged: None,
            graveyard: Vec::new(),
            ops: TypeOps::default(),
        }
    }
}

impl<C: Component> TypedColumns<C> {
    /// Opts `C` into snapshots.
    pub(crate) fn enable_clone(&mut self)
    where
        C: Clone,
    {
        self.ops.clone = Some(clone_column::<C>);
    }

    /// Opts `C` into checksums and desync reports.
    pub(crate) fn enable_checksum(&mut self)
    where
        C: Checksum + fmt::Debug,
    {
        self.ops.checksum = Some(checksum_value::<C>);
        self.ops.digest = Some(digest_block::<C>);
        self.enable_debug();
    }

    /// Opts `C` into save files, through serde.
    pub(crate) fn enable_serde(&mut self)
    where
        C: serde::Serialize + serde::de::DeserializeOwned,
    {
        self.ops.serde = Some(SaveFns::of());
    }

    /// Opts `C` into save files, as plain data.
    pub(crate) fn enable_pod(&mut self)
    where
        C: bytemuck::Pod,
    {
        self.ops.serde = Some(SaveFns::pod());
    }

    /// Opts `C` into `Debug` text (desync reports and write provenance).
    pub(crate) fn enable_debug(&mut self)
    where
        C: fmt::Debug,
    {
        self.ops.debug = Some(debug_fn::<C>());
    }

    /// Stages a value for the next `push_staged` / `replace_staged`. A value still staged
    /// is a spawn's that unwound before it was placed (a panicking bundle check or
    /// required constructor): it goes to the graveyard.
    #[inline]
    pub(crate) fn stage(&mut self, value: C) {
        if let Some(left) = self.staged.replace(value) {
            self.graveyard.push(left);
        }
    }

    /// Row `row` of column `col` (a location from `Storage::column_row_of`).
    #[inline]
    pub(crate) fn get(&self, col: u32, row: u32) -> &C {
        &self.columns[col as usize][row as usize]
    }

    /// [`get`](Self::get), mutably (no change mark: the caller marks what it changes).
    #[inline]
    pub(crate) fn get_mut(&mut self, col: u32, row: u32) -> &mut C {
        self.stamps[col as usize].touch();
        &mut self.columns[col as usize][row as usize]
    }

    /// Every column, by column index.
    #[inline]
    pub(crate) fn columns(&self) -> &[Vec<C>] {
        &self.columns
    }

    /// Column `col`, mutably, for pushing a batch of values (its marks are the
    /// caller's to keep row-aligned).
    #[inline]
    pub(crate) fn column_mut(&mut self, col: u32) -> &mut Vec<C> {
        self.stamps[col as usize].touch();
        &mut self.columns[col as usize]
    }

    /// Appends `values` (emptied) to column `col` and marks the new rows added; an empty
    /// column takes the buffer as it is (no copy).
    pub(crate) fn append_added(&mut self, col: u32, values: &mut Vec<C>) {
        self.stamps[col as usize].touch();
        let column = &mut self.columns[col as usize];
        let from = column.len();
        if column.is_empty() {
            std::mem::swap(column, values);
        } else {
            column.append(values);
        }
        let to = column.len();
        self.marks.mark_added(col as usize, from..to);
    }

    /// The change marks of every column.
    #[inline]
    pub(crate) fn marks(&self) -> &TypeMarks {
        &self.marks
    }

    /// The columns, mutably, beside the marks, shared: what `query_mut` lends its
    /// elements (values change in place; marks stay as Sync left them).
    #[inline]
    pub(crate) fn split_mut(&mut self) -> (&mut Vec<Vec<C>>, &TypeMarks) {
        self.stamps.iter_mut().for_each(Stamp::touch);
        (&mut self.columns, &self.marks)
    }

    /// Swaps the columns and marks with `columns` and `marks`: how Sync lends them to
    /// a fold and takes them back (the same call, twice). A fold marks every row it
    /// merges into as changed, so the columns with a changed row are the ones it may
    /// have written: their stamps are touched (on both calls: the marks that come back
    /// are the fold's).
    #[inline]
    pub(crate) fn swap_with(&mut self, columns: &mut Vec<Vec<C>>, marks: &mut TypeMarks) {
        std::mem::swap(&mut self.columns, columns);
        std::mem::swap(&mut self.marks, marks);
        for (k, stamp) in self.stamps.iter_mut().enumerate() {
            if self.marks.is_changed(k) {
                stamp.touch();
            }
        }
    }

    /// Takes the most recently removed value back out of the graveyard.
    pub(crate) fn take_removed(&mut self) -> Option<C> {
        self.graveyard.pop()
    }

    #[inline]
    fn take_staged(&mut self) -> C {
        match self.staged.take() {
            Some(v) => v,
            None => unreachable!("no value staged for `{}`", type_name::<C>()),
        }
    }
}

impl dyn AnyColumns + '_ {
    /// These columns as `C`'s: the one downcast from the type-erased face.
    ///
    /// # Panics
    /// If they are another type's (a component id used with the wrong type: a bug).
    #[inline]
    pub(crate) fn typed<C: Component>(&self) -> &TypedColumns<C> {
        let any: &dyn Any = self;
        match any.downcast_ref() {
            Some(t) => t,
            None => other_type::<C>(),
        }
    }

    /// `typed`, mutably.
    #[inline]
    pub(crate) fn typed_mut<C: Component>(&mut self) -> &mut TypedColumns<C> {
        let any: &mut dyn Any = self;
        match any.downcast_mut() {
            Some(t) => t,
            None => other_type::<C>(),
        }
    }
}

#[cold]
fn other_type<C>() -> ! {
    unreachable!("columns of another type than `{}`", type_name::<C>())
}

/// The type-erased face of [`TypedColumns`], used by table moves. Its typed side is one
/// downcast away (`typed` and `typed_mut`, on `dyn AnyColumns`).
pub(crate) trait AnyColumns: Any + Send + Sync {
    /// Adds an empty column (for a new table) and returns its index.
    fn add_column(&mut self) -> u32;
    /// Swap-removes row `row` of column `col` into the graveyard.
    fn remove_row(&mut self, col: u32, row: u32);
    /// Moves each of `rows` of column `src` to the end of column `dst` (swap-remove), in
    /// order: one batch of entity moves from one table to another.
    fn move_rows(&mut self, src: u32, rows: &[u32], dst: u32);
    /// [`remove_row`](Self::remove_row) for each of `rows`, in order.
    fn remove_rows(&mut self, col: u32, rows: &[u32]);
    /// Cuts column `col` back to `len` rows: the values past it go to the graveyard (not
    /// dropped here), their marks are cleared. For a structural change that unwound.
    fn truncate_rows(&mut self, col: u32, len: usize);
    /// Reorders column `col` by a permutation: the values by `swaps`
    /// (`storage::permute::swaps_of`), the marks by its inverse `inv` (row `p` goes to
    /// `inv[p]`) through `scratch`.
    fn permute_rows(&mut self, col: u32, inv: &[u32], swaps: &[(u32, u32)], scratch: &mut Vec<u64>);
    /// Pushes the staged value onto column `col`.
    fn push_staged(&mut self, col: u32);
    /// Stages the next of a command list's `values` (a `VecDeque<C>` of this type), for
    /// one insert or spawn.
    fn stage_next(&mut self, values: &mut Erased);
    /// Pushes the next `n` of a command list's `values` (a `VecDeque<C>` of this type)
    /// onto column `col`, in order: a batch of inserts.
    fn push_next(&mut self, values: &mut Erased, n: usize, col: u32);
    /// Pushes the staged value onto column `col` and marks its new row as `mark` says
    /// (an entity record's marks: bit 0 changed, bit 1 added, which implies changed): what
    /// a spawn or a move does for each of its types, in one call instead of two.
    fn push_staged_marked(&mut self, col: u32, mark: u8);
    /// Replaces row `row` of column `col` with the staged value (old one to the graveyard).
    fn replace_staged(&mut self, col: u32, row: u32);
    /// Sends the staged value to the graveyard (its target was dead).
    fn discard_staged(&mut self);
    /// Drops everything in the graveyard.
    fn flush_graveyard(&mut self);
    /// Number of rows in column `col`.
    fn column_len(&self, col: u32) -> usize;
    /// Marks `rows` of column `col` as added (and changed).
    fn mark_added(&mut self, col: u32, rows: std::ops::Range<usize>);
    /// Marks `row` of column `col` as changed.
    fn mark_changed(&mut self, col: u32, row: usize);
    /// The start of stage `stage`'s Sync (of `stages`): forgets the marks that stage's
    /// previous Sync made (all of them, with one stage; see `TypeMarks::begin_stage`).
    fn begin_marks(&mut self, stage: usize, stages: usize);
    /// `(changed, added)` of row `row` of column `col`.
    fn marks_of(&self, col: u32, row: u32) -> (bool, bool);
    /// Bytes reserved by the columns and the graveyard.
    fn capacity_bytes(&self) -> usize;
    /// Copies the columns into `into` (a `Vec<Vec<C>>`, reused if it is one), or returns
    /// `false` if the type was not opted into snapshots.
    fn save(&self, into: &mut Option<Box<dyn Any + Send + Sync>>) -> bool;
    /// Whether the type was opted into snapshots, so that [`load`](Self::load) can copy.
    fn can_load(&self) -> bool;
    /// Replaces the columns with a copy of `from` (made by [`save`](Self::save)), reusing
    /// their vectors. The number of columns must already match, and
    /// [`can_load`](Self::can_load) must hold (checked before a restore changes anything).
    fn load(&mut self, from: &(dyn Any + Send + Sync));
    /// Drops columns `n..` (their tables are gone).
    fn truncate_columns(&mut self, n: usize);
    /// Writes every value of column `col` into `h`, in row order; `false` (nothing
    /// written) if the type was not opted into checksums.
    fn checksum_column(&self, col: u32, h: &mut Checksummer) -> bool;
    /// The lane digest of rows `rows` of column `col` (one block of the world's
    /// checksum of version `v`); `None` if the type was not opted into checksums.
    fn digest_rows(&self, v: Version, col: u32, rows: std::ops::Range<usize>) -> Option<u64>;
    /// Whether the type was opted into checksums.
    fn is_checksummed(&self) -> bool;
    /// The [stamp](crate::stamp) of column `col`'s contents, named now if need be.
    fn stamp(&self, col: u32) -> u64;
    /// Whether the type was opted into snapshots.
    fn is_snapshotting(&self) -> bool;
    /// How the type is opted into save files, if it is.
    fn save_encoding(&self) -> Option<Encoding>;
    /// Appends the values of column `col` (in its [`Encoding`]), or says why not.
    fn encode_column(&self, col: u32, out: &mut Vec<u8>) -> Result<(), String>;
    /// The bytes of column `col`, for a type saved as plain data.
    fn column_bytes(&self, col: u32) -> Option<&[u8]>;
    /// Appends row `row` of column `col` (one value, in the type's [`Encoding`]).
    fn encode_value(&self, col: u32, row: u32, out: &mut Vec<u8>) -> Result<(), String>;
    /// Decodes one value of `len` bytes from `src` and stages it (for `push_staged`).
    fn stage_decoded(&mut self, src: &mut SaveSource<'_>, len: u64) -> Result<(), ColumnError>;
    /// No decoded columns yet: an empty `Vec<Vec<C>>`, erased, for
    /// [`read_column`](Self::read_column).
    fn new_columns(&self) -> Erased;
    /// Reads a column of `len` bytes holding `rows` values from `src` and pushes it onto
    /// `into` (from [`new_columns`](Self::new_columns)). Touches nothing here.
    fn read_column(
        &self,
        src: &mut SaveSource<'_>,
        len: u64,
        rows: usize,
        into: &mut Erased,
    ) -> Result<(), ColumnError>;
    /// Replaces every column and its marks by decoded ones (from
    /// [`read_column`](Self::read_column), as many columns as the storage's tables
    /// hold the type).
    fn install(&mut self, columns: Erased, marks: TypeMarks);
    /// The change marks, for save files.
    fn marks(&self) -> &TypeMarks;
    /// Empty columns of the same type with the same opt-ins.
    fn empty_like(&self) -> Box<dyn AnyColumns>;
    /// The checksum of one value, if the type was opted into checksums.
    fn checksum_value(&self, col: u32, row: u32) -> Option<u64>;
    /// One value, formatted with `Debug`, if the type was opted into checksums.
    fn debug_value(&self, col: u32, row: u32) -> Option<String>;
}

impl<C: Component> AnyColumns for TypedColumns<C> {
    fn add_column(&mut self) -> u32 {
        self.columns.push(Vec::new());
        self.stamps.push(Stamp::default());
        self.marks.add_column();
        self.columns.len() as u32 - 1
    }

    fn remove_row(&mut self, col: u32, row: u32) {
        self.stamps[col as usize].touch();
        let column = &mut self.columns[col as usize];
        self.marks
            .swap_remove(col as usize, row as usize, column.len());
        let v = column.swap_remove(row as usize);
        self.graveyard.push(v);
    }

    fn move_rows(&mut self, src: u32, rows: &[u32], dst: u32) {
        let (src, dst) = (src as usize, dst as usize);
        assert_ne!(src, dst, "moving rows within one column");
        self.stamps[src].touch();
        self.stamps[dst].touch();
        // Two distinct columns borrowed at once.
        let (a, b) = if src < dst {
            let (lo, hi) = self.columns.split_at_mut(dst);
            (&mut lo[src], &mut hi[0])
        } else {
            let (lo, hi) = self.columns.split_at_mut(src);
            (&mut hi[0], &mut lo[dst])
        };
        b.reserve(rows.len());
        for &row in rows {
            self.marks
                .move_row(src, row as usize, a.len(), dst, b.len());
            b.push(a.swap_remove(row as usize));
        }
    }

    fn truncate_rows(&mut self, col: u32, len: usize) {
        self.stamps[col as usize].touch();
        let column = &mut self.columns[col as usize];
        while column.len() > len {
            let last = column.len() - 1;
            self.marks.swap_remove(col as usize, last, column.len());
            self.graveyard
                .push(column.pop().expect("longer than `len`"));
        }
    }

    fn remove_rows(&mut self, col: u32, rows: &[u32]) {
        self.stamps[col as usize].touch();
        let column = &mut self.columns[col as usize];
        self.graveyard.reserve(rows.len());
        for &row in rows {
            self.marks
                .swap_remove(col as usize, row as usize, column.len());
            self.graveyard.push(column.swap_remove(row as usize));
        }
    }

    fn permute_rows(
        &mut self,
        col: u32,
        inv: &[u32],
        swaps: &[(u32, u32)],
        scratch: &mut Vec<u64>,
    ) {
        self.stamps[col as usize].touch();
        super::permute::apply_swaps(&mut self.columns[col as usize], swaps);
        self.marks.permute(col as usize, inv, scratch);
    }

    fn push_staged(&mut self, col: u32) {
        self.stamps[col as usize].touch();
        let v = self.take_staged();
        self.columns[col as usize].push(v);
    }

    fn stage_next(&mut self, values: &mut Erased) {
        let v = values
            .typed_mut::<VecDeque<C>>()
            .pop_front()
            .expect("a structural command without its value");
        self.stage(v);
    }

    fn push_next(&mut self, values: &mut Erased, n: usize, col: u32) {
        let values = values.typed_mut::<VecDeque<C>>();
        assert!(
            n <= values.len(),
            "structural commands without their values"
        );
        self.stamps[col as usize].touch();
        self.columns[col as usize].extend(values.drain(..n));
    }

    fn push_staged_marked(&mut self, col: u32, mark: u8) {
        self.stamps[col as usize].touch();
        let v = self.take_staged();
        let column = &mut self.columns[col as usize];
        let row = column.len();
        column.push(v);
        self.marks.mark_row(col as usize, row, mark);
    }

    fn replace_staged(&mut self, col: u32, row: u32) {
        self.stamps[col as usize].touch();
        let v = self.take_staged();
        let old = std::mem::replace(&mut self.columns[col as usize][row as usize], v);
        self.graveyard.push(old);
        self.mark_changed(col, row as usize);
    }

    fn discard_staged(&mut self) {
        let v = self.take_staged();
        self.graveyard.push(v);
    }

    fn flush_graveyard(&mut self) {
        self.graveyard.clear();
    }

    fn column_len(&self, col: u32) -> usize {
        self.columns[col as usize].len()
    }

    fn mark_added(&mut self, col: u32, rows: std::ops::Range<usize>) {
        self.marks.mark_added(col as usize, rows);
    }

    fn mark_changed(&mut self, col: u32, row: usize) {
        self.marks.mark_changed(col as usize, row..row + 1);
    }

    fn begin_marks(&mut self, stage: usize, stages: usize) {
        self.marks.begin_stage(stage, stages);
    }

    fn marks_of(&self, col: u32, row: u32) -> (bool, bool) {
        let m = &self.marks.columns[col as usize];
        (m.changed.get(row as usize), m.added.get(row as usize))
    }

    fn capacity_bytes(&self) -> usize {
        let size = std::mem::size_of::<C>();
        self.columns
            .iter()
            .map(|c| c.capacity() * size)
            .sum::<usize>()
            + self.graveyard.capacity() * size
    }

    fn save(&self, into: &mut Option<Box<dyn Any + Send + Sync>>) -> bool {
        let Some(clone) = self.ops.clone else {
            return false;
        };
        let reuse = into.as_mut().and_then(|b| b.downcast_mut::<Saved<C>>());
        let now = self.stamps.iter().map(Stamp::get);
        match reuse {
            Some((dst, marks, stamps)) => {
                copy_changed(clone, dst, stamps, &self.columns, now);
                marks.clone_from(&self.marks);
            }
            None => {
                let (mut dst, mut stamps) = (Vec::new(), Vec::<u64>::new());
                copy_changed(clone, &mut dst, &mut stamps, &self.columns, now);
                *into = Some(Box::new((dst, self.marks.clone(), stamps)));
            }
        }
        true
    }

    fn can_load(&self) -> bool {
        self.ops.clone.is_some()
    }

    fn load(&mut self, from: &(dyn Any + Send + Sync)) {
        let (src, marks, saved) = from
            .downcast_ref::<Saved<C>>()
            .expect("a snapshot of another type");
        let clone = self
            .ops
            .clone
            .expect("restore checks `can_load` before changing anything");
        debug_assert_eq!(self.columns.len(), src.len(), "tables restored first");
        debug_assert!(self.staged.is_none());
        self.graveyard.clear();
        copy_changed(
            clone,
            &mut self.columns,
            &mut self.stamps,
            src,
            saved.iter().copied(),
        );
        self.marks.clone_from(marks);
    }

    fn truncate_columns(&mut self, n: usize) {
        self.columns.truncate(n);
        self.stamps.truncate(n);
        self.marks.truncate(n);
    }

    fn checksum_column(&self, col: u32, h: &mut Checksummer) -> bool {
        let Some(sum) = self.ops.checksum else {
            return false;
        };
        for v in &self.columns[col as usize] {
            sum(v, h);
        }
        true
    }

    fn digest_rows(&self, v: Version, col: u32, rows: std::ops::Range<usize>) -> Option<u64> {
        Some((self.ops.digest?)(v, &self.columns[col as usize][rows]))
    }

    fn is_checksummed(&self) -> bool {
        self.ops.checksum.is_some()
    }

    fn stamp(&self, col: u32) -> u64 {
        self.stamps[col as usize].get()
    }

    fn is_snapshotting(&self) -> bool {
        self.ops.clone.is_some()
    }

    fn save_encoding(&self) -> Option<Encoding> {
        self.ops.serde.map(|f| f.encoding)
    }

    fn encode_column(&self, col: u32, out: &mut Vec<u8>) -> Result<(), String> {
        let fns = self.ops.serde.ok_or("not opted into saves")?;
        let values = &self.columns[col as usize];
        // Values of plain numbers encode to about their size: one allocation.
        out.reserve(std::mem::size_of_val::<[C]>(values));
        (fns.encode)(values, out)
    }

    fn column_bytes(&self, col: u32) -> Option<&[u8]> {
        let bytes = self.ops.serde?.bytes?;
        Some(bytes(&self.columns[col as usize]))
    }

    fn encode_value(&self, col: u32, row: u32, out: &mut Vec<u8>) -> Result<(), String> {
        let fns = self.ops.serde.ok_or("not opted into saves")?;
        (fns.encode)(
            std::slice::from_ref(&self.columns[col as usize][row as usize]),
            out,
        )
    }

    fn stage_decoded(&mut self, src: &mut SaveSource<'_>, len: u64) -> Result<(), ColumnError> {
        let fns = self
            .ops
            .serde
            .ok_or_else(|| ColumnError::Decode("not opted into saves".to_owned()))?;
        let mut one = Vec::with_capacity(1);
        (fns.decode)(src, len, 1, &mut one)?;
        match one.pop() {
            Some(v) => {
                self.stage(v);
                Ok(())
            }
            None => Err(ColumnError::Decode("no value".to_owned())),
        }
    }

    fn new_columns(&self) -> Erased {
        Erased::new(Vec::<Vec<C>>::new())
    }

    fn read_column(
        &self,
        src: &mut SaveSource<'_>,
        len: u64,
        rows: usize,
        into: &mut Erased,
    ) -> Result<(), ColumnError> {
        let fns = self
            .ops
            .serde
            .ok_or_else(|| ColumnError::Decode("not opted into saves".to_owned()))?;
        let columns = into.typed_mut::<Vec<Vec<C>>>();
        let mut col = Vec::new();
        (fns.decode)(src, len, rows, &mut col)?;
        columns.push(col);
        Ok(())
    }

    fn install(&mut self, columns: Erased, marks: TypeMarks) {
        let columns = columns.into_typed::<Vec<Vec<C>>>();
        debug_assert!(self.staged.is_none());
        debug_assert_eq!(columns.len(), marks.columns.len());
        self.graveyard.clear();
        self.columns = *columns;
        self.stamps.clear();
        self.stamps.resize_with(self.columns.len(), Stamp::default);
        self.marks = marks;
    }

    fn marks(&self) -> &TypeMarks {
        &self.marks
    }

    fn empty_like(&self) -> Box<dyn AnyColumns> {
        Box::new(TypedColumns::<C> {
            ops: TypeOps {
                clone: self.ops.clone,
                checksum: self.ops.checksum,
                digest: self.ops.digest,
                debug: self.ops.debug,
                serde: self.ops.serde,
            },
            ..TypedColumns::default()
        })
    }

    fn checksum_value(&self, col: u32, row: u32) -> Option<u64> {
        let sum = self.ops.checksum?;
        let mut h = Checksummer::new();
        sum(&self.columns[col as usize][row as usize], &mut h);
        Some(h.finish())
    }

    fn debug_value(&self, col: u32, row: u32) -> Option<String> {
        let debug = self.ops.debug?;
        let v = &self.columns[col as usize][row as usize];
        Some(Show(v, debug).to_string())
    }
}
