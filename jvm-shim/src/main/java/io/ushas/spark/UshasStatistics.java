package io.ushas.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.CatalogColumnStat;
import org.apache.spark.sql.catalyst.catalog.CatalogStatistics;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.expressions.FieldReference;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.colstats.ColumnStatistics;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Function1;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The statistics {@code CALL <catalog>.system.analyze_table} stored (table properties under Spark's own
 * keys {@code spark.sql.statistics.numRows} and {@code spark.sql.statistics.colStats.<column>.<stat>}, as
 * Spark's Hive catalog stores ANALYZE's) where Spark looks for them: {@code DESC FORMATTED t column} asks a
 * V2 table's scan for its reported column statistics ({@link #scanBuilder}); the optimizer reads a V1
 * relation's {@link CatalogStatistics}, which Spark does not build for a catalog's delegating table, so the
 * session extension's optimizer rule ({@link #rule}) sets them from the properties (with
 * {@code spark.sql.cbo.enabled} or {@code spark.sql.cbo.planStats.enabled}, Spark then uses the row count
 * and column statistics, as for its own tables). Adaptation only: the values are Python's.
 */
final class UshasStatistics {
    static final String PREFIX = "spark.sql.statistics.";
    static final String NUM_ROWS = PREFIX + "numRows";
    static final String COL_STATS = PREFIX + "colStats.";

    private UshasStatistics() {}

    private static OptionalLong number(Map<String, String> props, String key) {
        String v = props.get(key);
        if (v == null) return OptionalLong.empty();
        try {
            return OptionalLong.of(Long.parseLong(v.trim()));
        } catch (NumberFormatException e) {
            return OptionalLong.empty();
        }
    }

    /** A column's statistics as a V2 scan reports them (DESCRIBE shows min / max as text). */
    static ColumnStatistics column(Map<String, String> props, String column) {
        String p = COL_STATS + column + ".";
        return new ColumnStatistics() {
            @Override
            public OptionalLong distinctCount() {
                return number(props, p + "distinctCount");
            }

            @Override
            public Optional<Object> min() {
                return Optional.ofNullable(props.get(p + "min"));
            }

            @Override
            public Optional<Object> max() {
                return Optional.ofNullable(props.get(p + "max"));
            }

            @Override
            public OptionalLong nullCount() {
                return number(props, p + "nullCount");
            }

            @Override
            public OptionalLong avgLen() {
                return number(props, p + "avgLen");
            }

            @Override
            public OptionalLong maxLen() {
                return number(props, p + "maxLen");
            }
        };
    }

    /** What {@link UshasTable#newScanBuilder} answers: a scan that only reports statistics (reads take the
     *  V1 file path: Spark never plans this scan for a delegating table). */
    static ScanBuilder scanBuilder(StructType schema, Map<String, String> props) {
        Map<NamedReference, ColumnStatistics> columns = new HashMap<>();
        for (StructField f : schema.fields()) {
            if (props.containsKey(COL_STATS + f.name() + ".version")) {
                columns.put(FieldReference.column(f.name()), column(props, f.name()));
            }
        }
        Statistics stats = new Statistics() {
            @Override
            public OptionalLong sizeInBytes() {  // what analyze_table recorded (as Spark shows ANALYZE's only)
                return number(props, PREFIX + "totalSize");
            }

            @Override
            public OptionalLong numRows() {
                return number(props, NUM_ROWS);
            }

            @Override
            public Map<NamedReference, ColumnStatistics> columnStats() {
                return columns;
            }
        };
        Scan scan = new SupportsReportStatistics() {
            @Override
            public StructType readSchema() {
                return schema;
            }

            @Override
            public Statistics estimateStatistics() {
                return stats;
            }
        };
        return () -> scan;
    }

    // ---- the optimizer ---------------------------------------------------------------------------------
    static Function1<SparkSession, Rule<LogicalPlan>> rule() {
        return new scala.runtime.AbstractFunction1<>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new StatsRule();
            }
        };
    }

    /** Sets the catalog statistics of an Ushas table's V1 relation that has none, from its properties. */
    static final class StatsRule extends Rule<LogicalPlan> {
        @Override
        public LogicalPlan apply(LogicalPlan plan) {
            return plan.transformUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
                @Override
                public boolean isDefinedAt(LogicalPlan p) {
                    return p instanceof LogicalRelation r && r.relation() instanceof HadoopFsRelation h
                            && h.location() instanceof UshasFileIndex && r.catalogTable().isDefined()
                            && r.catalogTable().get().stats().isEmpty()
                            && r.catalogTable().get().properties().contains(NUM_ROWS);
                }

                @Override
                public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 p, Function1<A1, B1> fallback) {
                    if (!isDefinedAt(p)) return fallback.apply(p);
                    LogicalRelation r = (LogicalRelation) p;
                    CatalogTable ct = r.catalogTable().get();
                    CatalogTable withStats = withStats(ct, statistics(ct, r.relation().sizeInBytes()));
                    if (withStats == null) return fallback.apply(p);
                    @SuppressWarnings("unchecked")
                    B1 out = (B1) r.copy(r.relation(), r.output(), Option.apply(withStats), r.isStreaming(),
                            r.stream());
                    return out;
                }
            });
        }
    }

    static CatalogStatistics statistics(CatalogTable ct, long sizeInBytes) {
        Map<String, String> props = CollectionConverters.asJava(ct.properties());
        OptionalLong rows = number(props, NUM_ROWS);
        Map<String, String> cols = new HashMap<>();
        for (Map.Entry<String, String> e : props.entrySet()) {
            if (e.getKey().startsWith(COL_STATS)) cols.put(e.getKey().substring(COL_STATS.length()), e.getValue());
        }
        scala.collection.immutable.Map<String, String> colProps =
                scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(cols));
        Map<String, CatalogColumnStat> colStats = new HashMap<>();
        for (StructField f : ct.schema().fields()) {
            // a column without statistics (never analyzed, or withheld from this reader by its policy) is
            // left out: Spark's parser would log a WARN stack trace for each ("key not found")
            if (!cols.containsKey(f.name() + "." + CatalogColumnStat.KEY_VERSION())) continue;
            Option<CatalogColumnStat> s = CatalogColumnStat.fromMap(ct.identifier().table(), f.name(), colProps);
            if (s.isDefined()) colStats.put(f.name(), s.get());
        }
        Option<scala.math.BigInt> rowCount = rows.isPresent()
                ? Option.apply(scala.math.BigInt.apply(rows.getAsLong())) : Option.empty();
        return new CatalogStatistics(scala.math.BigInt.apply(sizeInBytes), rowCount,
                scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(colStats)));
    }

    /** {@code ct.copy(stats = Some(stats))}: a Scala case class copied from Java (its other fields kept). */
    static CatalogTable withStats(CatalogTable ct, CatalogStatistics stats) {
        try {
            Method copy = null;
            for (Method m : CatalogTable.class.getMethods()) {
                if (m.getName().equals("copy") && m.getParameterCount() == ct.productArity()) copy = m;
            }
            if (copy == null) return null;
            Object[] args = new Object[copy.getParameterCount()];
            for (int i = 0; i < args.length; i++) {
                args[i] = "stats".equals(ct.productElementName(i)) ? Option.apply(stats) : ct.productElement(i);
            }
            return (CatalogTable) copy.invoke(ct, args);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;  // another Spark's CatalogTable: no statistics, as before
        }
    }
}
