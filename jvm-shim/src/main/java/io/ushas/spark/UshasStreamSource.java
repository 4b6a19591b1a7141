package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxBytes;
import org.apache.spark.sql.connector.read.streaming.ReadMaxFiles;
import org.apache.spark.sql.connector.read.streaming.CompositeReadLimit;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation$;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.streaming.Offset;
import org.apache.spark.sql.execution.streaming.Source;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A table of the catalog read as a stream ({@code spark.readStream.table("ushas.db.t")}). Spark reads a
 * catalog table through its V1 description (see {@link UshasSource}), so its stream is a V1 micro-batch
 * {@link Source} with admission control ({@code maxFilesPerTrigger} / {@code maxBytesPerTrigger},
 * {@code Trigger.AvailableNow}). Python decides everything (ushas_catalog.spark.stream_source): where
 * the data ends ({@code stream_latest}) and which files lie between two offsets ({@code stream_batch});
 * this class turns the answer into Spark's file scan of exactly those files with the table's format.
 * Offsets are Python's JSON, kept as they are in the checkpoint: a restarted query reads the same files.
 */
final class UshasStreamSource implements Source, SupportsAdmissionControl,
        org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow {
    private static final long BLOCK_SIZE = 128L << 20;

    private final UshasCatalog catalog;
    private final Identifier ident;
    private final StructType schema;
    private final StructType partitionSchema;
    private final StructType dataSchema;
    private final String format;
    private final Map<String, String> readOptions;
    private final ObjectNode options;

    UshasStreamSource(UshasCatalog catalog, Identifier ident, StructType schema, StructType partitionSchema,
                      String format, Map<String, String> readOptions) {
        this.catalog = catalog;
        this.ident = ident;
        this.schema = schema;
        this.partitionSchema = partitionSchema;
        List<StructField> data = new ArrayList<>();
        for (StructField f : schema.fields()) {
            if (!partitionSchema.getFieldIndex(f.name()).isDefined()) data.add(f);
        }
        this.dataSchema = new StructType(data.toArray(new StructField[0]));
        this.format = format;
        this.readOptions = readOptions;
        this.options = Json.map(readOptions);
    }

    /** {@code Trigger.AvailableNow}: where the data ended when the query started (null: any trigger else). */
    private volatile JsonNode until;

    @Override
    public void prepareForTriggerAvailableNow() {
        ObjectNode r = catalog.request(ident);
        r.set("options", options);
        r.put("read_schema", schema.json());  // a schema change of the table since the query started stops it
        until = catalog.call("stream_latest", r, ident, null).get("offset");
    }

    @Override
    public StructType schema() {
        return schema;
    }

    /** A JSON offset of Python's, as Spark keeps it. */
    static final class JsonOffset extends Offset {
        private final String json;

        JsonOffset(String json) {
            this.json = json;
        }

        @Override
        public String json() {
            return json;
        }
    }

    private static JsonNode parse(org.apache.spark.sql.connector.read.streaming.Offset o) {
        return o == null ? null : Json.parse(o.json());
    }

    @Override
    public ReadLimit getDefaultReadLimit() {
        Long files = number("maxFilesPerTrigger");
        Long bytes = number("maxBytesPerTrigger");
        if (files != null && bytes != null) {
            return ReadLimit.compositeLimit(new ReadLimit[] {ReadLimit.maxFiles(files.intValue()), ReadLimit.maxBytes(bytes)});
        }
        if (files != null) return ReadLimit.maxFiles(files.intValue());
        if (bytes != null) return ReadLimit.maxBytes(bytes);
        return ReadLimit.allAvailable();
    }

    private Long number(String key) {
        java.util.Iterator<String> names = options.fieldNames();
        while (names.hasNext()) {
            String n = names.next();
            if (!n.equalsIgnoreCase(key)) continue;
            String text = options.get(n).asText().trim();
            try {
                long v = Long.parseLong(text);
                if (v > 0) return v;
            } catch (NumberFormatException ignored) {
                // refused below
            }
            throw Errors.invalidArgument("option " + key + " must be a positive number, not '" + text + "'");
        }
        return null;
    }

    @Override
    public org.apache.spark.sql.connector.read.streaming.Offset latestOffset(
            org.apache.spark.sql.connector.read.streaming.Offset start, ReadLimit limit) {
        ObjectNode r = catalog.request(ident);
        r.set("options", options);
        r.put("read_schema", schema.json());  // a schema change of the table since the query started stops it
        JsonNode from = parse(start);
        if (from != null) r.set("start", from);
        if (until != null) r.set("until", until);
        limits(r, limit);
        JsonNode offset = catalog.call("stream_latest", r, ident, null).get("offset");
        return offset == null || offset.isNull() ? null : new JsonOffset(offset.toString());
    }

    private static void limits(ObjectNode r, ReadLimit limit) {
        if (limit instanceof ReadMaxFiles f) r.put("max_files", f.maxFiles());
        else if (limit instanceof ReadMaxBytes b) r.put("max_bytes", b.maxBytes());
        else if (limit instanceof CompositeReadLimit c) {
            for (ReadLimit l : c.getReadLimits()) limits(r, l);
        } else if (!(limit instanceof ReadAllAvailable) && limit != null) {
            throw Errors.invalidArgument("a stream of table reads with maxFilesPerTrigger or maxBytesPerTrigger, not "
                    + limit);
        }
    }

    @Override
    public Option<Offset> getOffset() {
        org.apache.spark.sql.connector.read.streaming.Offset o = latestOffset(null, ReadLimit.allAvailable());
        return o == null ? Option.empty() : Option.apply(new JsonOffset(o.json()));
    }

    @Override
    public Dataset<Row> getBatch(Option<Offset> start, Offset end) {
        ObjectNode r = catalog.request(ident);
        r.set("options", options);
        r.put("read_schema", schema.json());  // a schema change of the table since the query started stops it
        if (start.isDefined()) r.set("start", parse(start.get()));
        r.set("end", parse(end));
        JsonNode answer = catalog.call("stream_batch", r, ident, null);
        SparkSession session = SparkSession.active();
        org.apache.spark.sql.classic.SparkSession classic = (org.apache.spark.sql.classic.SparkSession) session;
        FileFormat fileFormat = UshasSource.fileFormat(format, classic.sessionState().conf());
        scala.collection.immutable.Map<String, String> scalaOptions =
                scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(readOptions));
        HadoopFsRelation relation = new HadoopFsRelation(new Files(directories(answer), partitionSchema),
                partitionSchema, dataSchema, Option.empty(), fileFormat, scalaOptions,
                classic);
        // the table's V1 description, as a batch read's relation carries it: lineage names the table, not files
        scala.Option<org.apache.spark.sql.catalyst.catalog.CatalogTable> described = scala.Option.empty();
        if (catalog.loadTable(ident) instanceof org.apache.spark.sql.connector.catalog.DelegatingTable d) {
            described = scala.Option.apply(org.apache.spark.sql.connector.catalog.V1Table$.MODULE$
                    .toCatalogTable(catalog, ident, d));
        }
        LogicalRelation lr = new LogicalRelation(relation, toAttributes(relation.schema()), described, true,
                scala.Option.empty());
        Dataset<Row> batch = org.apache.spark.sql.classic.Dataset.ofRows(classic, lr);
        // the stream's columns in the table's order (the relation's puts partition columns last)
        org.apache.spark.sql.Column[] columns = new org.apache.spark.sql.Column[schema.fields().length];
        for (int i = 0; i < columns.length; i++) columns[i] = batch.col("`" + schema.fields()[i].name() + "`");
        return batch.select(columns);
    }

    private static scala.collection.immutable.Seq<org.apache.spark.sql.catalyst.expressions.AttributeReference>
            toAttributes(StructType schema) {
        return org.apache.spark.sql.catalyst.types.DataTypeUtils$.MODULE$.toAttributes(schema);
    }

    private List<PartitionDirectory> directories(JsonNode answer) {
        JsonNode files = answer.get("files");
        InternalRow[] rows = partitionSchema.isEmpty() ? null : Rows.fromAnswer(answer, partitionSchema);
        List<PartitionDirectory> out = new ArrayList<>();
        for (int i = 0; i < files.size(); i++) {
            List<FileStatusWithMetadata> statuses = new ArrayList<>();
            for (JsonNode f : files.get(i)) {
                FileStatus s = new FileStatus(f.get(1).asLong(), false, 1, BLOCK_SIZE, f.get(2).asLong(),
                        new Path(f.get(0).asText()));
                statuses.add(new FileStatusWithMetadata(s, scala.collection.immutable.Map$.MODULE$.empty()));
            }
            InternalRow row = rows == null ? new GenericInternalRow(0) : rows[i];
            out.add(new PartitionDirectory(row, CollectionConverters.asScala(statuses).toList()));
        }
        return out;
    }

    @Override
    public void commit(Offset end) {
    }

    @Override
    public void stop() {
    }

    @Override
    public String toString() {
        return "UshasStreamSource(" + catalog.name() + "." + String.join(".", UshasCatalog.toParts(ident)) + ")";
    }

    /** The files of one micro-batch, as the catalog answered them. */
    static final class Files implements FileIndex {
        private final List<PartitionDirectory> directories;
        private final StructType partitionSchema;

        Files(List<PartitionDirectory> directories, StructType partitionSchema) {
            this.directories = directories;
            this.partitionSchema = partitionSchema;
        }

        @Override
        public scala.collection.immutable.Seq<Path> rootPaths() {
            return CollectionConverters.asScala(List.<Path>of()).toList();
        }

        @Override
        public scala.collection.immutable.Seq<PartitionDirectory> listFiles(
                scala.collection.immutable.Seq<Expression> partitionFilters,
                scala.collection.immutable.Seq<Expression> dataFilters) {
            org.apache.spark.sql.catalyst.expressions.InterpretedPredicate exact =
                    PartitionFilters.predicate(CollectionConverters.asJava(partitionFilters), partitionSchema);
            List<PartitionDirectory> kept = new ArrayList<>();
            for (PartitionDirectory d : directories) if (PartitionFilters.keep(exact, d.values())) kept.add(d);
            return CollectionConverters.asScala(kept).toList();
        }

        @Override
        public String[] inputFiles() {
            List<String> out = new ArrayList<>();
            for (PartitionDirectory d : directories) {
                for (FileStatusWithMetadata f : CollectionConverters.asJava(d.files())) out.add(f.getPath().toString());
            }
            return out.toArray(new String[0]);
        }

        @Override
        public void refresh() {
        }

        @Override
        public long sizeInBytes() {
            long total = 0;
            for (PartitionDirectory d : directories) {
                for (FileStatusWithMetadata f : CollectionConverters.asJava(d.files())) total += f.getLen();
            }
            return total;
        }

        @Override
        public StructType partitionSchema() {
            return partitionSchema;
        }
    }
}
