package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** MergeUnmatchedSourceExec's key index (keys compared as their bytes), its packing of the unmatched rows, and
 *  MergeBroadcastJoin's choice of the key types that may be compared so. */
class MergeUnmatchedSourceTest {
    private static UnsafeRow key(DataType type, Object value) {
        return UnsafeProjection.create(new DataType[]{type}).apply(new GenericInternalRow(new Object[]{value})).copy();
    }

    @Test
    void oneWordKeysGetOneIndexEachAndNullItsOwn() {
        for (MergeUnmatchedSourceExec.KeyIndex index : List.of(new MergeUnmatchedSourceExec.WordIndex(3),
                new MergeUnmatchedSourceExec.RowIndex())) {
            assertEquals(0, index.add(key(DataTypes.IntegerType, -1)));
            assertEquals(1, index.add(key(DataTypes.IntegerType, 7)));
            assertEquals(0, index.add(key(DataTypes.IntegerType, -1)));  // the same key: its index
            assertEquals(2, index.add(key(DataTypes.IntegerType, null)));  // a NULL (of <=>): its own index
            assertEquals(2, index.add(key(DataTypes.IntegerType, null)));
            assertEquals(3, index.size());
            assertEquals(1, index.get(key(DataTypes.IntegerType, 7)));
            assertEquals(2, index.get(key(DataTypes.IntegerType, null)));
            assertEquals(-1, index.get(key(DataTypes.IntegerType, 8)));
            assertEquals(-1, index.get(key(DataTypes.IntegerType, 0)));  // 0 is not the empty slot's word
        }
    }

    @Test
    void manyKeysOfEveryWidthCollideWithoutMixingUp() {
        for (DataType type : List.of(DataTypes.LongType, DataTypes.IntegerType, DataTypes.ShortType)) {
            MergeUnmatchedSourceExec.WordIndex index = new MergeUnmatchedSourceExec.WordIndex(5000);
            for (int i = 0; i < 5000; i++) {
                Object v = type == DataTypes.LongType ? (Object) ((long) i << 32) : type == DataTypes.IntegerType
                        ? (Object) (i * 65536) : (Object) (short) (i - 2500);
                assertEquals(i, index.add(key(type, v)), type + " " + i);
            }
            Object missing = type == DataTypes.LongType ? (Object) 1L : type == DataTypes.IntegerType ? (Object) 1
                    : (Object) (short) 2600;
            assertEquals(-1, index.get(key(type, missing)), type.toString());
            assertEquals(5000, index.size());
        }
        MergeUnmatchedSourceExec.WordIndex decimals = new MergeUnmatchedSourceExec.WordIndex(2);
        DataType dec = DataTypes.createDecimalType(10, 2);
        assertEquals(0, decimals.add(key(dec, Decimal.apply(new BigDecimal("1.50")))));
        assertEquals(0, decimals.get(key(dec, Decimal.apply(new BigDecimal("1.5")))));  // the type's scale
    }

    @Test
    void aSealedIndexOfNearbyWordsAnswersAsTheTableDoes() {
        // words over a narrow span (ids: a bitmap), over one too wide (none), negative ints (words near 2^32), longs
        // around zero (signed words on both sides), and a key added after the seal (the bitmap is dropped)
        List<long[]> sets = List.of(new long[]{9_000_000, 9_000_002, 9_000_004, 10_000_000, 10_000_001},
                new long[]{1, 1L << 40}, new long[]{-3, -1, 5}, new long[]{-2, 0, 3, Long.MIN_VALUE + 1});
        for (DataType type : List.of(DataTypes.LongType, DataTypes.IntegerType)) {
            for (long[] set : sets) {
                if (type == DataTypes.IntegerType && set[set.length - 1] != (int) set[set.length - 1]) continue;
                MergeUnmatchedSourceExec.WordIndex index = new MergeUnmatchedSourceExec.WordIndex(set.length);
                for (int i = 0; i < set.length; i++) index.add(key(type, boxed(type, set[i])));
                index.seal();
                for (int i = 0; i < set.length; i++) {
                    assertEquals(i, index.get(key(type, boxed(type, set[i]))), type + " " + set[i]);
                    for (long near : new long[]{set[i] - 1, set[i] + 1, set[i] + 64, set[i] - 64}) {
                        boolean in = false;
                        for (long v : set) in |= v == near;
                        if (!in && (type == DataTypes.LongType || near == (int) near)) {
                            assertEquals(-1, index.get(key(type, boxed(type, near))), type + " " + near);
                        }
                    }
                }
                assertEquals(-1, index.get(key(type, boxed(type, 7_777))), type.toString());
                assertEquals(set.length, index.add(key(type, boxed(type, 7_777))));  // after the seal
                assertEquals(set.length, index.get(key(type, boxed(type, 7_777))), type.toString());
                index.seal();
                assertEquals(set.length, index.get(key(type, boxed(type, 7_777))), type.toString());
            }
        }
    }

    private static Object boxed(DataType type, long v) {
        return type == DataTypes.LongType ? (Object) v : (Object) (int) v;
    }

    @Test
    void unmatchedRowsArePackedAndReadBackInOrder() {
        UnsafeProjection p = UnsafeProjection.create(new DataType[]{DataTypes.IntegerType, DataTypes.StringType});
        List<UnsafeRow> rows = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            rows.add(p.apply(new GenericInternalRow(new Object[]{i, i == 3 ? null : UTF8String.fromString("v" + i)}))
                    .copy());
        }
        Iterator<InternalRow> back = MergeUnmatchedSourceExec.unpack(List.of(MergeUnmatchedSourceExec.pack(rows.subList(0, 2)),
                MergeUnmatchedSourceExec.pack(List.of()), MergeUnmatchedSourceExec.pack(rows.subList(2, 5))).iterator(), 2);
        List<String> seen = new ArrayList<>();
        while (back.hasNext()) {
            InternalRow r = back.next();
            seen.add(r.getInt(0) + ":" + (r.isNullAt(1) ? "null" : r.getUTF8String(1).toString()));
        }
        assertEquals(List.of("0:v0", "1:v1", "2:v2", "3:null", "4:v4"), seen);
    }

    @Test
    void onlyTypesWhoseEqualityIsTheirBytesAreScanned() {
        for (DataType t : List.of(DataTypes.IntegerType, DataTypes.LongType, DataTypes.StringType, DataTypes.DateType,
                DataTypes.TimestampType, DataTypes.BinaryType, DataTypes.BooleanType, DataTypes.createDecimalType(18, 2))) {
            assertTrue(MergeBroadcastJoin.bytesEquality(t), t.toString());
        }
        for (DataType t : List.of(DataTypes.DoubleType, DataTypes.FloatType, DataTypes.createDecimalType(38, 2),
                org.apache.spark.sql.types.StringType$.MODULE$.apply("UTF8_LCASE"),
                DataTypes.createArrayType(DataTypes.IntegerType))) {
            assertFalse(MergeBroadcastJoin.bytesEquality(t), t.toString());
        }
    }
}
