package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** MergeFileSkipping's bounds (keys tallied against the files' row groups' [min, max]) and the skipped files' holder. */
class MergeFileSkippingTest {
    /** Whether a file of one range [min, max] holds one of {@code keys} (a skipped file holds none). */
    private static boolean holds(long[] keys, long min, long max) {
        MergeFileSkipping.Bounds bounds = new MergeFileSkipping.Bounds(List.of(
                new MergeFileSkipping.FileBounds("f", new long[] {min}, new long[] {max}, false)));
        return bounds.unmatched(keys, false).isEmpty();
    }

    @Test
    void aKeyInsideOrOnTheBoundsHoldsOthersDoNot() {
        long[] keys = {42, -5, 10, 3};  // in any order: tallied key by key
        assertTrue(holds(keys, 3, 3));  // on both bounds
        assertTrue(holds(keys, 4, 10));  // on the max
        assertTrue(holds(keys, -100, -5));
        assertTrue(holds(keys, 11, Long.MAX_VALUE));
        assertTrue(holds(new long[] {Long.MAX_VALUE}, Long.MAX_VALUE, Long.MAX_VALUE));
        assertTrue(holds(new long[] {Long.MIN_VALUE}, Long.MIN_VALUE, 0));
        assertFalse(holds(keys, 4, 9));  // between two keys
        assertFalse(holds(keys, 43, 100));  // past the last
        assertFalse(holds(keys, Long.MIN_VALUE, -6));  // before the first
        assertFalse(holds(new long[0], Long.MIN_VALUE, Long.MAX_VALUE));
    }

    @Test
    void overlappingRangesOfSeveralFilesAreTalliedPerFile() {
        // a: [0, 10] and [20, 30]; b: [5, 25]; c: [100, 200]; d: bounds unknown
        MergeFileSkipping.Bounds bounds = new MergeFileSkipping.Bounds(List.of(
                new MergeFileSkipping.FileBounds("a", new long[] {0, 20}, new long[] {10, 30}, false),
                new MergeFileSkipping.FileBounds("b", new long[] {5}, new long[] {25}, false),
                new MergeFileSkipping.FileBounds("c", new long[] {100}, new long[] {200}, false)));
        assertEquals(Set.of("b", "c"), bounds.unmatched(new long[] {2}, false));
        assertEquals(Set.of("a", "c"), bounds.unmatched(new long[] {15}, false));
        assertEquals(Set.of("c"), bounds.unmatched(new long[] {22}, false));
        assertEquals(Set.of("a", "b"), bounds.unmatched(new long[] {200, 31, -1}, false));
        MergeFileSkipping.Hits hits = bounds.hits();
        assertFalse(hits.add(50));  // no file may hold it: its row is written early
        assertTrue(hits.add(25));
        assertEquals(Set.of("c"), hits.unmatched(false));
        MergeFileSkipping.Hits unknown = new MergeFileSkipping.Bounds(List.of(
                MergeFileSkipping.FileBounds.unknown("d"),
                new MergeFileSkipping.FileBounds("c", new long[] {100}, new long[] {200}, false))).hits();
        assertTrue(unknown.add(50));  // d may hold anything
        assertEquals(Set.of("c"), unknown.unmatched(false));
    }

    @Test
    void tooManyFilesReadNoFooterAndAGroupOfNoFileHoldsNoKey() {
        List<org.apache.hadoop.fs.FileStatus> many = java.util.Collections.nCopies(MergeFileSkipping.MAX_FILES + 1,
                new org.apache.hadoop.fs.FileStatus());
        assertEquals(null, MergeFileSkipping.read(many, null, "id"));
        MergeFileSkipping.Bounds none = MergeFileSkipping.read(List.of(), null, "id").get();
        assertFalse(none.hits().add(1L));
        assertFalse(none.mayHoldNull());
        assertEquals(Set.of(), none.unmatched(new long[] {1}, true));
    }

    @Test
    void keysOutsideEveryRowGroupAreHeldByNoFile() {
        MergeFileSkipping.Bounds bounds = new MergeFileSkipping.Bounds(List.of(
                new MergeFileSkipping.FileBounds("a", new long[] {1, 20}, new long[] {9, 30}, false),
                new MergeFileSkipping.FileBounds("b", new long[] {5}, new long[] {12}, true),
                new MergeFileSkipping.FileBounds("c", new long[] {100}, new long[] {100}, false)));
        for (long k : new long[] {1, 5, 9, 10, 12, 20, 25, 30, 100}) assertTrue(bounds.hits().add(k), "holds " + k);
        for (long k : new long[] {0, 13, 19, 31, 99, 101, Long.MIN_VALUE, Long.MAX_VALUE}) {
            assertFalse(bounds.hits().add(k), "does not hold " + k);
        }
        assertTrue(bounds.mayHoldNull());  // b may hold a NULL
        assertEquals(Set.of("b", "c"), bounds.unmatched(new long[] {3, 25}, false));
        assertEquals(Set.of("c"), bounds.unmatched(new long[] {3, 25}, true));  // a NULL key: b may match it
        assertEquals(Set.of("a", "b"), bounds.unmatched(new long[] {100}, false));
    }

    @Test
    void keysInRunsAndInterleavedRunsAreTalliedAsOneByOne() {
        // one tally over keys in ascending runs, two runs interleaved, and at random, against each key's ranges
        java.util.Random random = new java.util.Random(7);
        for (int round = 0; round < 200; round++) {
            List<MergeFileSkipping.FileBounds> files = new java.util.ArrayList<>();
            for (int f = 0; f < 1 + random.nextInt(6); f++) {
                int groups = random.nextInt(3);
                long[] mins = new long[groups];
                long[] maxs = new long[groups];
                for (int g = 0; g < groups; g++) {
                    mins[g] = random.nextInt(200) - 50;
                    maxs[g] = mins[g] + random.nextInt(40);
                }
                files.add(new MergeFileSkipping.FileBounds("f" + f, mins, maxs, false));
            }
            MergeFileSkipping.Hits hits = new MergeFileSkipping.Bounds(files).hits();
            Set<String> held = new java.util.HashSet<>();
            long a = random.nextInt(250) - 60;
            long b = random.nextInt(250) - 60;
            for (int i = 0; i < 60; i++) {
                long key = round % 3 == 0 ? a + i : round % 3 == 1 ? (i % 2 == 0 ? a + i : b + i)
                        : random.nextInt(260) - 60;
                boolean any = false;
                for (MergeFileSkipping.FileBounds f : files) {
                    for (int g = 0; g < f.mins().length; g++) {
                        if (f.mins()[g] <= key && key <= f.maxs()[g]) {
                            held.add(f.path());
                            any = true;
                        }
                    }
                }
                assertEquals(any, hits.add(key), "round " + round + " key " + key);
            }
            Set<String> unmatched = new java.util.HashSet<>();
            for (MergeFileSkipping.FileBounds f : files) if (!held.contains(f.path())) unmatched.add(f.path());
            assertEquals(unmatched, hits.unmatched(false), "round " + round);
        }
    }

    @Test
    void aFileWithoutBoundsMayHoldAnyKeyAndIsNeverSkipped() {
        MergeFileSkipping.Bounds bounds = new MergeFileSkipping.Bounds(List.of(
                new MergeFileSkipping.FileBounds("a", new long[] {1}, new long[] {9}, false),
                MergeFileSkipping.FileBounds.unknown("u")));
        assertTrue(bounds.hits().add(1_000L));
        assertTrue(bounds.mayHoldNull());
        assertEquals(Set.of("a"), bounds.unmatched(new long[] {50}, false));
        MergeFileSkipping.Bounds nullsOnly = new MergeFileSkipping.Bounds(List.of(
                new MergeFileSkipping.FileBounds("n", new long[0], new long[0], true)));
        assertFalse(nullsOnly.hits().add(7L));
        assertTrue(nullsOnly.mayHoldNull());
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
