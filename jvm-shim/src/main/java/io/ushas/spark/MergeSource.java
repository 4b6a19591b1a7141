package io.ushas.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

import java.io.Serializable;

/**
 * A MERGE's source rows as {@link MergeProbeExec} holds them on the driver and broadcasts them: collected as Spark
 * collects a plan's rows, packed in one array of bytes (each row's size, then its bytes: the format of
 * {@link MergeUnmatchedSourceExec#pack}) for the broadcast, and read in place where they are unpacked. (Collecting
 * each task's rows packed by the task was tried: slower, its results over Spark's direct result size going through
 * the block manager.)
 */
final class MergeSource implements Serializable {
    private final byte[] packed;
    private final int fields;
    private final int count;
    private transient UnsafeRow[] rows;

    private MergeSource(byte[] packed, int fields, UnsafeRow[] rows) {
        this.packed = packed;
        this.fields = fields;
        this.count = rows.length;
        this.rows = rows;
    }

    /** The rows of {@code plan}. */
    static MergeSource collect(SparkPlan plan) {
        StructType schema = plan.schema();
        InternalRow[] collected = plan.executeCollect();
        UnsafeProjection unsafe = null;  // Spark collects UnsafeRows: made only for another row
        UnsafeRow[] rows = new UnsafeRow[collected.length];
        for (int i = 0; i < rows.length; i++) {
            if (collected[i] instanceof UnsafeRow u) {
                rows[i] = u;
                continue;
            }
            if (unsafe == null) unsafe = UnsafeProjection.create(schema);
            rows[i] = unsafe.apply(collected[i]).copy();
        }
        return new MergeSource(MergeUnmatchedSourceExec.pack(java.util.Arrays.asList(rows)), schema.size(), rows);
    }

    /** the size written before a row (big-endian, as a {@code ByteBuffer} writes it) */
    private static int sizeAt(byte[] b, int at) {
        return (b[at] & 0xff) << 24 | (b[at + 1] & 0xff) << 16 | (b[at + 2] & 0xff) << 8 | b[at + 3] & 0xff;
    }

    /** The rows: on the driver those collected; unpacked once per executor, each pointing into the packed bytes (in
     *  local mode the broadcast value is the driver's object: its rows). */
    synchronized UnsafeRow[] rows() {
        if (rows == null) {
            UnsafeRow[] out = new UnsafeRow[count];
            for (int i = 0, at = 0; i < count; i++) {
                int size = sizeAt(packed, at);
                out[i] = new UnsafeRow(fields);
                out[i].pointTo(packed, Platform.BYTE_ARRAY_OFFSET + at + 4, size);
                at += 4 + size;
            }
            rows = out;
        }
        return rows;
    }
}
