package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.v2.FileDataSourceV2;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.SchemaRelationProvider;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * How Spark reads a table of the catalog. A {@link UshasTable} tells Spark (through the table
 * description Spark turns into a V1 relation) that its data source is this class, with the table's
 * identity in reserved options; Spark asks it for the relation and gets Spark's own
 * {@link HadoopFsRelation} with the table's real file format, whose file index is
 * {@link UshasFileIndex}: the catalog, not a directory listing, says which files are read. Users
 * never see this class as the table's provider (the table's properties keep the real format).
 */
public final class UshasSource implements SchemaRelationProvider, org.apache.spark.sql.sources.StreamSourceProvider {
    static final String CATALOG = "ushas.catalog";
    static final String NAMESPACE = "ushas.namespace";
    static final String TABLE = "ushas.table";
    static final String FORMAT = "ushas.format";
    static final String PARTITION_BY = "ushas.partitionBy";
    static final String LOCATION = "ushas.location";
    /** a read as of a version (time travel): the version whose files the index lists */
    static final String AS_OF = "ushas.asOf";

    /** The reserved options a table's read description carries (added to its {@code option.*}). */
    static Map<String, String> options(String catalog, Identifier ident, String format, String[] partitionBy,
                                       String location) {
        Map<String, String> out = new HashMap<>();
        out.put(CATALOG, catalog);
        out.put(NAMESPACE, Json.strings(ident.namespace()).toString());
        out.put(TABLE, ident.name());
        out.put(FORMAT, format);
        out.put(PARTITION_BY, Json.strings(partitionBy).toString());
        out.put(LOCATION, location);
        return out;
    }

    @Override
    public BaseRelation createRelation(SQLContext sqlContext, scala.collection.immutable.Map<String, String> parameters,
                                       StructType schema) {
        SparkSession session = SparkSession.active();
        String catalogName = required(parameters, CATALOG);
        CatalogPlugin plugin = session.sessionState().catalogManager().catalog(catalogName);
        if (!(plugin instanceof UshasCatalog catalog)) {
            throw Errors.invalidArgument("catalog " + catalogName
                    + " is not an ushas catalog");
        }
        Identifier ident = Identifier.of(Json.toStrings(Json.parse(required(parameters, NAMESPACE))),
                required(parameters, TABLE));
        JsonNode partitionBy = Json.parse(required(parameters, PARTITION_BY));
        List<StructField> partitionFields = new ArrayList<>();
        List<StructField> dataFields = new ArrayList<>();
        for (StructField f : schema.fields()) {
            boolean partition = false;
            for (JsonNode p : partitionBy) partition |= p.asText().equalsIgnoreCase(f.name());
            (partition ? partitionFields : dataFields).add(f);
        }
        Map<String, String> options = new HashMap<>();
        for (Map.Entry<String, String> e : CollectionConverters.asJava(parameters).entrySet()) {
            if (!e.getKey().toLowerCase(java.util.Locale.ROOT).startsWith("ushas.")) options.put(e.getKey(), e.getValue());
        }
        StructType partitionSchema = new StructType(partitionFields.toArray(new StructField[0]));
        Path root = new Path(required(parameters, LOCATION));
        scala.collection.immutable.Map<String, String> scalaOptions =
                scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(options));
        SQLConf conf = session.sessionState().conf();
        UshasFileIndex index = new UshasFileIndex(catalog, ident, partitionSchema, root,
                session.sessionState().newHadoopConfWithOptions(scalaOptions), conf.defaultSizeInBytes(),
                catalog.policyFor(ident),  // the catalog's answer, not an option a reader could leave out
                parameters.get(AS_OF).isDefined() ? Long.valueOf(parameters.get(AS_OF).get()) : null);
        return new HadoopFsRelation(index, partitionSchema, new StructType(dataFields.toArray(new StructField[0])),
                Bucketing.bucketSpec(parameters.get(Bucketing.OPTION)), fileFormat(required(parameters, FORMAT), conf),
                scalaOptions, session);
    }

    /** A stream of the table ({@code readStream.table}): the table's columns, in its order. */
    @Override
    public scala.Tuple2<String, StructType> sourceSchema(SQLContext sqlContext, Option<StructType> schema,
                                                         String providerName,
                                                         scala.collection.immutable.Map<String, String> parameters) {
        required(parameters, CATALOG);
        if (schema.isEmpty()) throw Errors.invalidArgument("a stream of a catalog table needs the table's schema");
        return new scala.Tuple2<>("ushas", schema.get());
    }

    /**
     * The stream of a table ({@link UshasStreamSource}). A table with a row filter or masks streams only in a
     * session whose {@link RowPolicies} rule wrapped this stream's relation in them (it marks the options
     * with {@link RowPolicies#STREAM_MARK}'s secret of this JVM, which no reader's option can know).
     */
    @Override
    public org.apache.spark.sql.execution.streaming.Source createSource(
            SQLContext sqlContext, String metadataPath, Option<StructType> schema, String providerName,
            scala.collection.immutable.Map<String, String> parameters) {
        SparkSession session = SparkSession.active();
        String catalogName = required(parameters, CATALOG);
        CatalogPlugin plugin = session.sessionState().catalogManager().catalog(catalogName);
        if (!(plugin instanceof UshasCatalog catalog)) {
            throw Errors.invalidArgument("catalog " + catalogName + " is not an ushas catalog");
        }
        Identifier ident = Identifier.of(Json.toStrings(Json.parse(required(parameters, NAMESPACE))),
                required(parameters, TABLE));
        if (parameters.get(AS_OF).isDefined()) {
            throw Errors.invalidArgument("a stream of table " + ident + " cannot read as of a version: use the "
                    + "option startingVersion");
        }
        JsonNode policy = catalog.policyFor(ident);
        if (policy != null && !RowPolicies.streamMarked(parameters)) {
            throw Errors.sneak(Errors.analysis("USHAS_RowPolicy", "table " + catalogName + "."
                    + String.join(".", UshasCatalog.toParts(ident)) + " has a row filter or column mask and cannot be "
                    + "read: this session does not apply row filters and column masks; start it with "
                    + "spark.sql.extensions=io.ushas.spark.UshasExtensions"));
        }
        JsonNode partitionBy = Json.parse(required(parameters, PARTITION_BY));
        List<StructField> partitionFields = new ArrayList<>();
        StructType full = schema.get();
        for (JsonNode p : partitionBy) {
            for (StructField f : full.fields()) if (f.name().equalsIgnoreCase(p.asText())) partitionFields.add(f);
        }
        Map<String, String> options = new HashMap<>();
        for (Map.Entry<String, String> e : CollectionConverters.asJava(parameters).entrySet()) {
            if (!e.getKey().toLowerCase(java.util.Locale.ROOT).startsWith("ushas.")) options.put(e.getKey(), e.getValue());
        }
        return new UshasStreamSource(catalog, ident, full, new StructType(partitionFields.toArray(new StructField[0])),
                required(parameters, FORMAT), options);
    }

    private static String required(scala.collection.immutable.Map<String, String> parameters, String key) {
        Option<String> v = parameters.get(key);
        if (v.isEmpty()) {
            throw Errors.invalidArgument("" + UshasSource.class.getName()
                    + " reads tables of an ushas catalog only (option " + key + " is missing)");
        }
        return v.get();
    }

    /** The V1 {@link FileFormat} of a format name ({@code parquet}, {@code orc}, {@code csv}, ...). */
    static FileFormat fileFormat(String format, SQLConf conf) {
        try {
            Object source = DataSource.lookupDataSource(format, conf).getDeclaredConstructor().newInstance();
            if (source instanceof FileFormat f) return f;
            if (source instanceof FileDataSourceV2 v2) return v2.fallbackFileFormat().getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw Errors.invalidArgument("cannot instantiate the " + format + " data source: " + e, e);
        }
        throw Errors.invalidArgument(format + " is not a file format");
    }
}
