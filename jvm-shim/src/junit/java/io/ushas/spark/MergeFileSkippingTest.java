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
    void noFilesOrTooManyReadNoFooter() {
        assertEquals(Set.of(), MergeFileSkipping.unmatched(List.of(), null, "id", new long[] {1}, false));
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
