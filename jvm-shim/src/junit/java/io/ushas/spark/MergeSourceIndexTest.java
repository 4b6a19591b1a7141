package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.Test;

/** MergeSourceIndex's key read straight from a row: the key row it writes has the bytes Spark's projection writes
 *  (the target's keys are projected: a key indexed one way and looked up the other must be the same word), and
 *  the word the probe computes from the value is that row's. */
class MergeSourceIndexTest {
    @Test
    void aKeyWrittenFromItsValueIsTheProjectionsKeyRow() {
        List<Object[]> cases = List.of(
                new Object[] {DataTypes.IntegerType, new Object[] {0, 1, -1, Integer.MIN_VALUE, Integer.MAX_VALUE}},
                new Object[] {DataTypes.DateType, new Object[] {0, 19_000, -5}},
                new Object[] {DataTypes.LongType, new Object[] {0L, -1L, Long.MIN_VALUE, Long.MAX_VALUE, 1L << 40}},
                new Object[] {DataTypes.ShortType, new Object[] {(short) 0, (short) -1, Short.MIN_VALUE, Short.MAX_VALUE}},
                new Object[] {DataTypes.ByteType, new Object[] {(byte) 0, (byte) -1, Byte.MIN_VALUE, Byte.MAX_VALUE}});
        UnsafeRowWriter writer = new UnsafeRowWriter(1);
        for (Object[] c : cases) {
            DataType type = (DataType) c[0];
            MergeSourceIndex.IntegerKey key = new MergeSourceIndex.IntegerKey(0, type);
            UnsafeProjection project = UnsafeProjection.create(new DataType[] {type});
            for (Object v : (Object[]) c[1]) {
                UnsafeRow projected = project.apply(new GenericInternalRow(new Object[] {v})).copy();
                long read = key.read(projected);
                assertEquals(((Number) v).longValue(), read, type + " " + v);
                writer.reset();
                writer.zeroOutNullBytes();
                key.write(writer, read);
                assertEquals(projected, writer.getRow(), type + " " + v);
                assertEquals(projected.getLong(0), writer.getRow().getLong(0), type + " " + v);
                // the probe looks a target row's key up by its word, read from the row without a key row
                assertEquals(projected.getLong(0), key.word(read), type + " " + v);
            }
        }
    }
}
