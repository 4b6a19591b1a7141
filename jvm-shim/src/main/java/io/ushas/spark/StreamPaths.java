package io.ushas.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.streaming.WriteToStream;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.v2.FileDataSourceV2;
import org.apache.spark.sql.execution.streaming.runtime.StreamingRelation;
import org.apache.spark.sql.execution.streaming.sinks.FileStreamSink;

import java.util.Set;

/**
 * The paths a streaming query reads and writes by path, for {@link PathReads}: a file source
 * ({@code spark.readStream.format("parquet").load(path)}, {@code .text(path)}, ...: a {@code StreamingRelation}
 * of a file format, checked when the stream's DataFrame is analyzed and again when the query starts) and a file
 * sink with its checkpoint ({@code writeStream.format("parquet").option("path", p).start()} or {@code .start(p)}:
 * the {@code WriteToStream} plan Spark analyzes when the query starts, before its first batch). Paths are
 * qualified with the session's Hadoop configuration; a glob is cut at its first wildcard component (the directory
 * holding whatever it may match).
 */
final class StreamPaths {
    private StreamPaths() {
    }

    /** The paths of a streaming file source (none for other sources and catalog tables' streams). */
    static void source(StreamingRelation relation, Set<String> out) {
        DataSource ds = relation.dataSource();
        if (ds.catalogTable().isDefined()) return;  // a catalog table's stream: the catalog checks it
        Class<?> provider = ds.providingClass();
        if (!FileFormat.class.isAssignableFrom(provider) && !FileDataSourceV2.class.isAssignableFrom(provider)) return;
        Configuration conf = ds.sparkSession().sessionState().newHadoopConfWithOptions(ds.options());
        scala.collection.Iterator<String> paths = ds.paths().iterator();
        while (paths.hasNext()) out.add(qualified(paths.next(), conf));
        scala.collection.Iterator<scala.Tuple2<String, String>> options = ds.options().iterator();
        while (options.hasNext()) {
            scala.Tuple2<String, String> e = options.next();
            if ("path".equalsIgnoreCase(e._1())) out.add(qualified(e._2(), conf));
        }
    }

    /** The directory a started stream's file sink writes, and its checkpoint (files written by path too). */
    static void sink(WriteToStream write, Set<String> out) {
        if (write.sink() instanceof FileStreamSink sink) {
            try {
                Path base = (Path) field(sink, "basePath");
                Configuration conf = (Configuration) field(sink, "hadoopConf");
                out.add(base.getFileSystem(conf).makeQualified(base).toString());
            } catch (ReflectiveOperationException | ClassCastException | java.io.IOException e) {
                throw new IllegalStateException("cannot tell where the stream's file sink writes: " + e, e);
            }
        }
        if (write.resolvedCheckpointLocation() != null && !write.resolvedCheckpointLocation().isEmpty()) {
            out.add(write.resolvedCheckpointLocation());
        }
    }

    /** After a refused start: removes the empty directories Spark made for the stream before any analysis rule
     *  could see it (the file sink's {@code _spark_metadata}, made when {@code DataStreamWriter.start} creates the
     *  sink; the checkpoint directory, made by {@code ResolveWriteToStream}), so that a refused stream leaves no
     *  {@code _spark_metadata} making path readers of the directory see an empty log. Non-empty ones, and the
     *  parents {@code mkdirs} made, stay. */
    static void undo(WriteToStream write) {
        java.util.List<Path> dirs = new java.util.ArrayList<>();
        Configuration conf = null;
        try {
            if (write.sink() instanceof FileStreamSink sink) {
                conf = (Configuration) field(sink, "hadoopConf");
                dirs.add(new Path((Path) field(sink, "basePath"), FileStreamSink.metadataDir()));
            }
        } catch (ReflectiveOperationException | ClassCastException e) {
            return;
        }
        if (conf == null) conf = org.apache.spark.SparkContext.getOrCreate().hadoopConfiguration();
        String checkpoint = write.resolvedCheckpointLocation();
        if (checkpoint != null && !checkpoint.isEmpty()) dirs.add(new Path(checkpoint));
        for (Path dir : dirs) {
            try {
                org.apache.hadoop.fs.FileSystem fs = dir.getFileSystem(conf);
                if (fs.getFileStatus(dir).isDirectory() && fs.listStatus(dir).length == 0) fs.delete(dir, false);
            } catch (java.io.IOException | RuntimeException e) {
                // not there, or not ours to remove: nothing was written in it either
            }
        }
    }

    private static Object field(Object o, String name) throws ReflectiveOperationException {
        java.lang.reflect.Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
    }

    /** {@code path} qualified (scheme, authority, absolute, {@code ..} resolved), cut before its first
     *  component with a glob character. */
    static String qualified(String path, Configuration conf) {
        String[] parts = path.split("/", -1);
        StringBuilder kept = new StringBuilder();
        for (int i = 0; i < parts.length; i++) {
            if (parts[i].matches(".*[*?\\[\\]{}].*")) break;
            if (i > 0) kept.append('/');
            kept.append(parts[i]);
        }
        String text = kept.length() == 0 ? "/" : kept.toString();
        Path p = new Path(text);
        try {
            return p.getFileSystem(conf).makeQualified(p).toString();
        } catch (java.io.IOException e) {
            return p.toString();
        }
    }
}
