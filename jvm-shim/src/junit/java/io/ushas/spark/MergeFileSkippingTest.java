package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** MergeFileSkipping's bounds test (sorted keys against a row group's [min, max]) and the skipped files' holder. */
class MergeFileSkippingTest {
    @Test
    void aKeyInsideOrOnTheBoundsHoldsOthersDoNot() {
        long[] keys = {-5, 3, 10, 42};
        assertTrue(MergeFileSkipping.holds(keys, 3, 3));  // on both bounds
        assertTrue(MergeFileSkipping.holds(keys, 4, 10));  // on the max
        assertTrue(MergeFileSkipping.holds(keys, -100, -5));
        assertTrue(MergeFileSkipping.holds(keys, 11, Long.MAX_VALUE));
        assertFalse(MergeFileSkipping.holds(keys, 4, 9));  // between two keys
        assertFalse(MergeFileSkipping.holds(keys, 43, 100));  // past the last
        assertFalse(MergeFileSkipping.holds(keys, Long.MIN_VALUE, -6));  // before the first
        assertFalse(MergeFileSkipping.holds(new long[0], Long.MIN_VALUE, Long.MAX_VALUE));
    }

    @Test
    void tooManyFilesReadNoFooterAndAGroupOfNoFileHoldsNoKey() {
        List<org.apache.hadoop.fs.FileStatus> many = java.util.Collections.nCopies(MergeFileSkipping.MAX_FILES + 1,
                new org.apache.hadoop.fs.FileStatus());
        assertEquals(null, MergeFileSkipping.read(many, null, "id"));
        MergeFileSkipping.Bounds none = MergeFileSkipping.read(List.of(), null, "id").get();
        assertFalse(none.mayHold(1L));
        assertFalse(none.mayHold(null));
        assertEquals(Set.of(), none.unmatched(new long[] {1}, true));
    }

    @Test
    void keysOutsideEveryRowGroupAreHeldByNoFile() {
        MergeFileSkipping.Bounds bounds = new MergeFileSkipping.Bounds(List.of(
                new MergeFileSkipping.FileBounds("a", new long[] {1, 20}, new long[] {9, 30}, false),
                new MergeFileSkipping.FileBounds("b", new long[] {5}, new long[] {12}, true),
                new MergeFileSkipping.FileBounds("c", new long[] {100}, new long[] {100}, false)));
        for (long k : new long[] {1, 5, 9, 10, 12, 20, 25, 30, 100}) assertTrue(bounds.mayHold(k), "holds " + k);
        for (long k : new long[] {0, 13, 19, 31, 99, 101, Long.MIN_VALUE, Long.MAX_VALUE}) {
            assertFalse(bounds.mayHold(k), "does not hold " + k);
        }
        assertTrue(bounds.mayHold(null));  // b may hold a NULL
        assertEquals(Set.of("b", "c"), bounds.unmatched(new long[] {3, 25}, false));
        assertEquals(Set.of("c"), bounds.unmatched(new long[] {3, 25}, true));  // a NULL key: b may match it
        assertEquals(Set.of("a", "b"), bounds.unmatched(new long[] {100}, false));
    }

    @Test
    void aFileWithoutBoundsMayHoldAnyKeyAndIsNeverSkipped() {
        MergeFileSkipping.Bounds bounds = new MergeFileSkipping.Bounds(List.of(
                new MergeFileSkipping.FileBounds("a", new long[] {1}, new long[] {9}, false),
                MergeFileSkipping.FileBounds.unknown("u")));
        assertTrue(bounds.mayHold(1_000L));
        assertTrue(bounds.mayHold(null));
        assertEquals(Set.of("a"), bounds.unmatched(new long[] {50}, false));
        MergeFileSkipping.Bounds nullsOnly = new MergeFileSkipping.Bounds(List.of(
                new MergeFileSkipping.FileBounds("n", new long[0], new long[0], true)));
        assertFalse(nullsOnly.mayHold(7L));
        assertTrue(nullsOnly.mayHold(null));
    }

    @Test
    void theHolderKeepsACopyOfWhatItIsGiven() {
        MergeFileSkipping.Skipped skipped = new MergeFileSkipping.Skipped();
        assertFalse(skipped.contains("file:/t/a.parquet"));
        java.util.Set<String> given = new java.util.HashSet<>(Set.of("file:/t/a.parquet"));
        skipped.set(given);
        given.add("file:/t/b.parquet");
        assertTrue(skipped.contains("file:/t/a.parquet"));
        assertFalse(skipped.contains("file:/t/b.parquet"));
    }
}
