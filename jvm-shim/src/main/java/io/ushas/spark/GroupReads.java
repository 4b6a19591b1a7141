package io.ushas.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.PartitionedFile;

import java.io.Serializable;

/** How a row-level statement's group scan ({@link UshasRowLevel}) reads its files: whole files an input partition,
 *  read one after the other with the format's reader, the files a MERGE found no match in skipped
 *  ({@link MergeFileSkipping}). */
final class GroupReads {
    private GroupReads() {
    }

    /** Whole files read one after the other by one task. */
    record FilePart(PartitionedFile[] files) implements InputPartition {
    }

    /** The rows (or batches) of a part's files, each file's reader closed once it is read. */
    static final class Chained implements java.util.Iterator<Object>, java.io.Closeable {
        private final scala.Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> read;
        private final PartitionedFile[] files;
        private final MergeFileSkipping.Skipped skipped;
        private int next;
        private scala.collection.Iterator<?> current = scala.collection.Iterator$.MODULE$.empty();

        Chained(scala.Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> read, PartitionedFile[] files,
                MergeFileSkipping.Skipped skipped) {
            this.read = read;
            this.files = files;
            this.skipped = skipped;
        }

        @Override
        public boolean hasNext() {
            while (!current.hasNext()) {
                if (next == files.length) return false;
                closeCurrent();
                PartitionedFile f = files[next++];
                if (skipped.contains(f.toPath().toString())) {  // no row of it matches (MergeFileSkipping)
                    current = scala.collection.Iterator$.MODULE$.empty();
                    continue;
                }
                current = read.apply(f);
            }
            return true;
        }

        @Override
        public Object next() {
            if (!hasNext()) throw new java.util.NoSuchElementException();
            return current.next();
        }

        private void closeCurrent() {
            if (current instanceof java.io.Closeable c) {
                try {
                    c.close();
                } catch (java.io.IOException ignored) {
                    // the task ends anyway
                }
            }
        }

        @Override
        public void close() {
            closeCurrent();
        }
    }

    /** Reads one file with the format's reader (columnar batches when it returns them), partition values
     *  appended. */
    static final class Reader implements PartitionReaderFactory, Serializable {
        private final scala.Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> read;
        private final boolean columnar;
        private final MergeFileSkipping.Skipped skipped;

        Reader(scala.Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> read, boolean columnar,
               MergeFileSkipping.Skipped skipped) {
            this.read = read;
            this.columnar = columnar;
            this.skipped = skipped;
        }

        @Override
        public boolean supportColumnarReads(InputPartition partition) {
            return columnar;
        }

        /** The format's reader returns its batches through its row iterator (Spark's FileScanRDD does the same). */
        @Override
        public PartitionReader<org.apache.spark.sql.vectorized.ColumnarBatch> createColumnarReader(InputPartition partition) {
            Chained batches = new Chained(read, ((FilePart) partition).files(), skipped);
            return new PartitionReader<>() {
                private org.apache.spark.sql.vectorized.ColumnarBatch current;

                @Override
                public boolean next() {
                    if (!batches.hasNext()) return false;
                    current = (org.apache.spark.sql.vectorized.ColumnarBatch) batches.next();
                    return true;
                }

                @Override
                public org.apache.spark.sql.vectorized.ColumnarBatch get() {
                    return current;
                }

                @Override
                public void close() {
                    batches.close();
                }
            };
        }

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            Chained rows = new Chained(read, ((FilePart) partition).files(), skipped);
            return new PartitionReader<>() {
                private InternalRow current;

                @Override
                public boolean next() {
                    if (!rows.hasNext()) return false;
                    current = (InternalRow) rows.next();
                    return true;
                }

                @Override
                public InternalRow get() {
                    return current;
                }

                @Override
                public void close() {
                    rows.close();
                }
            };
        }
    }
}
