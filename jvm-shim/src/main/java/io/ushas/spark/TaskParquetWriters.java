package io.ushas.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.compression.CompressionCodecFactory;
import org.apache.parquet.crypto.EncryptionPropertiesFactory;
import org.apache.parquet.hadoop.CodecFactory;
import org.apache.parquet.hadoop.MemoryManager;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetOutputFormat;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.codec.CodecConfig;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.hadoop.util.HadoopOutputFile;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetOutputWriter;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.VariantType;

import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayDeque;
import java.util.Map;

/**
 * Spark's Parquet {@link OutputWriterFactory} with the per-file writer set-up done once per write task.
 * Spark's {@code ParquetOutputWriter} calls {@code ParquetOutputFormat.getRecordWriter} for every file: it
 * parses the Parquet settings out of the whole Hadoop configuration ({@code ColumnConfigParser}), builds a
 * new {@code CodecFactory} and compressor (a page-size, 1 MB, buffer) and a new write support that parses
 * the schema's JSON — per file, so a write of N partitions from T tasks pays it N × T times.
 *
 * <p>Here a task's first file is Spark's own writer; its {@link ParquetProperties} (what parquet-mr parsed
 * from the configuration) are read from it, and the task's later files reuse them with one compressor of the
 * same codec and page size (its {@code compress} resets the buffer and the compressor on every call, and a
 * file already shares one compressor between all its columns, so files in turn, or open together in the
 * task's one thread, can share it; released when the task ends), write supports initialised once and handed
 * from a closed file to the next, and the same block size, padding, validation and memory manager as
 * {@code getRecordWriter}. Per file: the {@code ParquetFileWriter} (the create) and the record writer. The
 * files are the same as Spark's (tests/spark/test_task_parquet_writers.py compares the footers).
 *
 * <p>Spark's writer is kept, file by file, outside a task, when Parquet encryption is configured, when the
 * data has a variant column (Spark may shred it per file), and when this parquet-mr does not keep its
 * settings where expected. The option {@code ushas.write.taskParquetWriters=false} turns it off.
 */
final class TaskParquetWriters extends OutputWriterFactory {
    private static final long serialVersionUID = 1L;
    static final String SWITCH = "ushas.write.taskParquetWriters";

    private final OutputWriterFactory spark;
    /** files this JVM opened with a task's shared set-up (for tests: TaskParquetWritersProbe) */
    private static final java.util.concurrent.atomic.AtomicLong SHARED = new java.util.concurrent.atomic.AtomicLong();
    /** one per write task: this factory is deserialized with each task's writer factory */
    private transient Task task;

    private TaskParquetWriters(OutputWriterFactory spark) {
        this.spark = spark;
    }

    /** Spark's factory for a parquet write of {@code dataSchema}, with the set-up shared per task where it
     *  can be; Spark's as it is otherwise. */
    static OutputWriterFactory wrap(OutputWriterFactory spark, StructType dataSchema, boolean enabled) {
        if (!enabled || hasVariant(dataSchema)) return spark;
        return new TaskParquetWriters(spark);
    }

    private static boolean hasVariant(DataType type) {
        if (type instanceof VariantType) return true;
        if (type instanceof StructType s) {
            for (StructField f : s.fields()) if (hasVariant(f.dataType())) return true;
        }
        if (type instanceof ArrayType a) return hasVariant(a.elementType());
        if (type instanceof MapType m) return hasVariant(m.keyType()) || hasVariant(m.valueType());
        return false;
    }

    @Override
    public String getFileExtension(TaskAttemptContext context) {
        return spark.getFileExtension(context);
    }

    @Override
    public OutputWriter newInstance(String path, StructType dataSchema, TaskAttemptContext context) {
        Task t = task();
        if (t != null && t.ready()) {
            try {
                return t.open(path, context);
            } catch (IOException | InterruptedException | ReflectiveOperationException e) {
                throw Errors.sneak(e);
            }
        }
        OutputWriter first = spark.newInstance(path, dataSchema, context);
        if (t != null) t.learn(first, context);
        return first;
    }

    static long sharedFiles() {
        return SHARED.get();
    }

    private synchronized Task task() {
        TaskContext tc = TaskContext.get();
        if (tc == null) return null;
        if (task == null || task.context != tc) {
            Task t = new Task(tc);
            tc.addTaskCompletionListener(new org.apache.spark.util.TaskCompletionListener() {
                @Override
                public void onTaskCompletion(TaskContext context) {
                    t.release();
                }
            });
            task = t;
        }
        return task;
    }

    /** What a task's files share. Used by the task's one thread (synchronized all the same). */
    private static final class Task {
        final TaskContext context;
        private boolean learnt;
        private ParquetProperties props;
        private Configuration conf;
        private CompressionCodecName codec;
        private long blockSize;
        private int maxPadding;
        private boolean validating;
        private CodecFactory codecs;
        private CompressionCodecFactory.BytesInputCompressor compressor;
        private final ArrayDeque<Support> supports = new ArrayDeque<>();

        Task(TaskContext context) {
            this.context = context;
        }

        synchronized boolean ready() {
            return props != null;
        }

        /** From the task's first file, Spark's writer: its parsed settings (once; null: stay with Spark's). */
        synchronized void learn(OutputWriter first, TaskAttemptContext attempt) {
            if (learnt) return;
            learnt = true;
            Configuration c = attempt.getConfiguration();
            if (!Internals.AVAILABLE || !(first instanceof ParquetOutputWriter)
                    || EncryptionPropertiesFactory.loadFactory(c) != null
                    || ParquetOutputFormat.getMemoryManager() == null) {
                return;
            }
            ParquetProperties p = Internals.propertiesOf(first);
            if (p == null) return;
            conf = c;
            codec = CodecConfig.from(attempt).getCodec();
            blockSize = ParquetOutputFormat.getLongBlockSize(c);
            maxPadding = c.getInt(ParquetOutputFormat.MAX_PADDING_BYTES, ParquetWriter.MAX_PADDING_SIZE_DEFAULT);
            validating = ParquetOutputFormat.getValidation(c);
            codecs = new CodecFactory(c, p.getPageSizeThreshold());  // as ParquetRecordWriter makes it
            compressor = codecs.getCompressor(codec);
            props = p;
        }

        synchronized Support support() throws ReflectiveOperationException {
            Support s = supports.poll();
            if (s != null) return s;
            @SuppressWarnings("unchecked")
            WriteSupport<InternalRow> ws = (WriteSupport<InternalRow>) ParquetOutputFormat.getWriteSupportClass(conf)
                    .getDeclaredConstructor().newInstance();
            return new Support(ws, ws.init(conf));
        }

        synchronized void done(Support s) {
            supports.push(s);
        }

        OutputWriter open(String path, TaskAttemptContext attempt)
                throws IOException, InterruptedException, ReflectiveOperationException {
            Support s = support();
            WriteSupport.WriteContext wc = s.context();
            ParquetFileWriter w = new ParquetFileWriter(HadoopOutputFile.fromPath(new Path(path), conf),
                    wc.getSchema(), ParquetFileWriter.Mode.CREATE, blockSize, maxPadding, null, props);
            w.start();
            SHARED.incrementAndGet();
            MemoryManager memory = ParquetOutputFormat.getMemoryManager();
            Object rw;
            try {
                rw = Internals.NEW_WRITER.invokeExact(w, (WriteSupport<?>) s.writeSupport(), wc.getSchema(),
                        wc.getExtraMetaData(), blockSize, compressor, validating, props);
                Internals.ADD_WRITER.invokeExact(memory, rw, (Long) blockSize);
            } catch (Throwable e) {
                throw Errors.sneak(e);
            }
            return new OutputWriter() {
                private boolean closed;

                @Override
                public void write(InternalRow row) {
                    try {
                        Internals.WRITE.invokeExact(rw, (Object) row);
                    } catch (Throwable e) {
                        throw Errors.sneak(e);
                    }
                }

                @Override
                public void close() {
                    if (closed) return;
                    closed = true;
                    try {
                        try {
                            Internals.CLOSE.invokeExact(rw);
                        } finally {
                            Internals.REMOVE_WRITER.invokeExact(memory, rw);
                        }
                    } catch (Throwable e) {
                        throw Errors.sneak(e);
                    }
                    done(s);  // a file closed cleanly hands its write support to the next
                }

                @Override
                public String path() {
                    return path;
                }
            };
        }

        synchronized void release() {
            if (codecs != null) codecs.release();
            codecs = null;
            compressor = null;
            props = null;
            supports.clear();
        }
    }

    /**
     * parquet-mr's {@code ParquetRecordWriter} minus its {@code CodecFactory}: an
     * {@code InternalParquetRecordWriter} over the started file writer, registered with the JVM's Parquet
     * {@link MemoryManager} until closed — the same calls in the same order as {@code ParquetRecordWriter},
     * with the task's compressor. The internal writer and the memory manager's registration are
     * package-private, and the shim's classes are not in parquet-mr's runtime package (another class loader),
     * so they are reached by reflection, once; {@link #AVAILABLE} false (another parquet-mr) keeps Spark's
     * writer.
     */
    static final class Internals {
        static final boolean AVAILABLE;
        static final MethodHandle NEW_WRITER;
        static final MethodHandle WRITE;
        static final MethodHandle CLOSE;
        static final MethodHandle ADD_WRITER;
        static final MethodHandle REMOVE_WRITER;
        private static final Field RECORD_WRITER;
        private static final Field INTERNAL_WRITER;
        private static final Field PROPS;

        static {
            MethodHandle newWriter = null;
            MethodHandle write = null;
            MethodHandle close = null;
            MethodHandle add = null;
            MethodHandle remove = null;
            Field recordWriter = null;
            Field internalWriter = null;
            Field props = null;
            boolean ok = false;
            try {
                MethodHandles.Lookup lookup = MethodHandles.lookup();
                Class<?> internal = Class.forName("org.apache.parquet.hadoop.InternalParquetRecordWriter", false,
                        ParquetOutputFormat.class.getClassLoader());
                Constructor<?> ctor = internal.getDeclaredConstructor(ParquetFileWriter.class, WriteSupport.class,
                        org.apache.parquet.schema.MessageType.class, Map.class, long.class,
                        CompressionCodecFactory.BytesInputCompressor.class, boolean.class, ParquetProperties.class);
                ctor.setAccessible(true);
                newWriter = lookup.unreflectConstructor(ctor).asType(MethodType.methodType(Object.class,
                        ParquetFileWriter.class, WriteSupport.class, org.apache.parquet.schema.MessageType.class,
                        Map.class, long.class, CompressionCodecFactory.BytesInputCompressor.class, boolean.class,
                        ParquetProperties.class));
                Method w = internal.getDeclaredMethod("write", Object.class);
                w.setAccessible(true);
                write = lookup.unreflect(w).asType(MethodType.methodType(void.class, Object.class, Object.class));
                Method c = internal.getDeclaredMethod("close");
                c.setAccessible(true);
                close = lookup.unreflect(c).asType(MethodType.methodType(void.class, Object.class));
                Method a = MemoryManager.class.getDeclaredMethod("addWriter", internal, Long.class);
                a.setAccessible(true);
                add = lookup.unreflect(a).asType(MethodType.methodType(void.class, MemoryManager.class,
                        Object.class, Long.class));
                Method r = MemoryManager.class.getDeclaredMethod("removeWriter", internal);
                r.setAccessible(true);
                remove = lookup.unreflect(r).asType(MethodType.methodType(void.class, MemoryManager.class,
                        Object.class));
                recordWriter = ParquetOutputWriter.class.getDeclaredField("recordWriter");
                recordWriter.setAccessible(true);
                internalWriter = org.apache.parquet.hadoop.ParquetRecordWriter.class.getDeclaredField("internalWriter");
                internalWriter.setAccessible(true);
                props = internal.getDeclaredField("props");
                props.setAccessible(true);
                ok = true;
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                ok = false;
            }
            AVAILABLE = ok;
            NEW_WRITER = newWriter;
            WRITE = write;
            CLOSE = close;
            ADD_WRITER = add;
            REMOVE_WRITER = remove;
            RECORD_WRITER = recordWriter;
            INTERNAL_WRITER = internalWriter;
            PROPS = props;
        }

        private Internals() {}

        /** The {@link ParquetProperties} Spark's writer of a file uses (what parquet-mr parsed from the
         *  configuration), or null. */
        static ParquetProperties propertiesOf(OutputWriter sparkWriter) {
            if (!AVAILABLE) return null;
            try {
                Object rw = RECORD_WRITER.get(sparkWriter);
                if (!(rw instanceof org.apache.parquet.hadoop.ParquetRecordWriter<?>)) return null;
                return PROPS.get(INTERNAL_WRITER.get(rw)) instanceof ParquetProperties p ? p : null;
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null;
            }
        }
    }

    private record Support(WriteSupport<InternalRow> writeSupport, WriteSupport.WriteContext context) {}
}
