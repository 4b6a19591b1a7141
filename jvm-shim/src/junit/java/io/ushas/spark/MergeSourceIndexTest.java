package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.Test;

/** MergeSourceIndex's key read straight from a row: the word it computes from the value is that of the key row
 *  Spark's projection writes (a key indexed one way and looked up the other must be the same word). */
class MergeSourceIndexTest {
    @Test
    void aKeysWordFromItsValueIsTheProjectionsKeyRows() {
        List<Object[]> cases = List.of(
                new Object[] {DataTypes.IntegerType, new Object[] {0, 1, -1, Integer.MIN_VALUE, Integer.MAX_VALUE}},
                new Object[] {DataTypes.DateType, new Object[] {0, 19_000, -5}},
                new Object[] {DataTypes.LongType, new Object[] {0L, -1L, Long.MIN_VALUE, Long.MAX_VALUE, 1L << 40}},
                new Object[] {DataTypes.ShortType, new Object[] {(short) 0, (short) -1, Short.MIN_VALUE, Short.MAX_VALUE}},
                new Object[] {DataTypes.ByteType, new Object[] {(byte) 0, (byte) -1, Byte.MIN_VALUE, Byte.MAX_VALUE}});
        for (Object[] c : cases) {
            DataType type = (DataType) c[0];
            MergeSourceIndex.IntegerKey key = new MergeSourceIndex.IntegerKey(0, type);
            UnsafeProjection project = UnsafeProjection.create(new DataType[] {type});
            for (Object v : (Object[]) c[1]) {
                UnsafeRow projected = project.apply(new GenericInternalRow(new Object[] {v})).copy();
                long read = key.read(projected);
                assertEquals(((Number) v).longValue(), read, type + " " + v);
                // the index looks a row's key up by its word, read from the row without a key row
                assertEquals(projected.getLong(0), key.word(read), type + " " + v);
                MergeUnmatchedSourceExec.WordIndex index = new MergeUnmatchedSourceExec.WordIndex(4);
                int slot = index.add(projected);
                assertEquals(slot, index.getWord(key.word(read)), type + " " + v);
                assertEquals(slot, index.addWord(key.word(read)), type + " " + v);
            }
        }
    }
}
