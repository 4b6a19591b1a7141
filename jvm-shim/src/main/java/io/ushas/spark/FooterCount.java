package io.ushas.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.PlanExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.StructField;
import scala.Function1;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code SELECT count(*) FROM t [WHERE <partition columns only>]} on a catalog table of parquet files,
 * answered without a Spark job: the catalog already knows which files the partition filters select
 * ({@link UshasFileIndex#listFiles}, one bridge call, the same call and the same policy checks as the
 * scan it replaces), and each parquet file's footer holds its row count. Iceberg answers the same
 * query from its manifests' record counts (its aggregate push-down); this is the closest the catalog's
 * data can give. The aggregate becomes a one-row {@link LocalRelation}.
 *
 * <p>Only when the answer is exactly what the scan would count: every aggregate is {@code count} of a
 * non-null literal (no DISTINCT, no FILTER); between it and the table only projections of columns and
 * deterministic filters on partition columns without subqueries (a row filter of a policy on a data
 * column, any filter on a data column, a mask in a filter: the scan runs); a parquet table read as a
 * batch; at most {@link #MAX_FILES_CONF} files (footers are read one by one on the driver). Data files
 * are never changed in place (row-level statements rewrite whole files), so a file's footer count is
 * its rows. Any failure to read a footer leaves the query as it was: the scan then reports it as
 * Spark does. Plan adaptation only.
 */
final class FooterCount extends Rule<LogicalPlan> {
    /** at most this many files are counted from their footers (0 turns the rule off) */
    static final String MAX_FILES_CONF = "spark.ushas.read.countFromFooters.maxFiles";
    static final int MAX_FILES_DEFAULT = 16;

    private final SparkSession session;

    FooterCount(SparkSession session) {
        this.session = session;
    }

    static Function1<SparkSession, Rule<LogicalPlan>> factory() {
        return new scala.runtime.AbstractFunction1<>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new FooterCount(session);
            }
        };
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        int maxFiles = maxFiles();
        if (maxFiles <= 0) return plan;
        return plan.transformDown(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan p) {
                return p instanceof Aggregate a && a.groupingExpressions().isEmpty() && countsOnly(a)
                        && relationUnder(a.child(), new ArrayList<>()) != null;
            }

            @Override
            public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 p, Function1<A1, B1> fallback) {
                if (!isDefinedAt(p)) return fallback.apply(p);
                LogicalPlan counted = counted((Aggregate) p, maxFiles);
                if (counted == null) return fallback.apply(p);
                @SuppressWarnings("unchecked")
                B1 out = (B1) counted;
                return out;
            }
        });
    }

    private int maxFiles() {
        String v = session.conf().get(MAX_FILES_CONF, Integer.toString(MAX_FILES_DEFAULT));
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(MAX_FILES_CONF + ": expected a number of files, got '" + v + "'");
        }
    }

    /** Every output of the aggregate is count(non-null literal), plain. */
    private static boolean countsOnly(Aggregate a) {
        List<NamedExpression> outs = CollectionConverters.asJava(a.aggregateExpressions());
        if (outs.isEmpty()) return false;
        for (NamedExpression e : outs) {
            if (!(e instanceof Alias alias && alias.child() instanceof AggregateExpression ae)) return false;
            if (ae.isDistinct() || ae.filter().isDefined() || ae.mode() != Complete$.MODULE$) return false;
            if (!(ae.aggregateFunction() instanceof Count c)) return false;
            for (Expression arg : CollectionConverters.asJava(c.children())) {
                if (!(arg instanceof Literal lit) || lit.value() == null) return false;
            }
        }
        return true;
    }

    /** The table's relation under projections of columns and partition-only filters (collected into
     *  {@code filters}), or null when anything else is in between. */
    private static LogicalRelation relationUnder(LogicalPlan p, List<Expression> filters) {
        while (true) {
            if (p instanceof Project pr) {
                for (NamedExpression e : CollectionConverters.asJava(pr.projectList())) {
                    if (!(e instanceof AttributeReference)) return null;
                }
                p = pr.child();
            } else if (p instanceof Filter f) {
                filters.add(f.condition());
                p = f.child();
            } else {
                break;
            }
        }
        if (!(p instanceof LogicalRelation lr) || lr.isStreaming()) return null;
        if (!(lr.relation() instanceof HadoopFsRelation h) || !(h.location() instanceof UshasFileIndex)
                || !(h.fileFormat() instanceof ParquetFileFormat)) {
            return null;
        }
        List<String> partitionColumns = new ArrayList<>();
        for (StructField f : h.partitionSchema().fields()) partitionColumns.add(f.name().toLowerCase(Locale.ROOT));
        for (Expression cond : filters) {
            if (!cond.deterministic() || cond.find(x -> x instanceof PlanExpression).isDefined()) return null;
            for (Attribute ref : CollectionConverters.asJava(cond.references().toSeq())) {
                if (!partitionColumns.contains(ref.name().toLowerCase(Locale.ROOT))
                        || !lr.outputSet().contains(ref)) {
                    return null;
                }
            }
        }
        return lr;
    }

    /** The aggregate's one row, counted from the footers of the files the filters select; null: leave
     *  the query as it is. */
    private LogicalPlan counted(Aggregate a, int maxFiles) {
        List<Expression> conditions = new ArrayList<>();
        LogicalRelation lr = relationUnder(a.child(), conditions);
        HadoopFsRelation h = (HadoopFsRelation) lr.relation();
        List<Expression> filters = new ArrayList<>();
        for (Expression cond : conditions) filters.addAll(splitConjuncts(cond));
        List<FileStatusWithMetadata> files = new ArrayList<>();
        // the same listing (and policy checks) as the scan: partition filters go to the catalog
        for (PartitionDirectory d : CollectionConverters.asJava(h.location().listFiles(
                CollectionConverters.asScala(normalized(filters, h)).toList(),
                CollectionConverters.asScala(List.<Expression>of()).toList()))) {
            files.addAll(CollectionConverters.asJava(d.files()));
            if (files.size() > maxFiles) return null;
        }
        Configuration conf = session.sessionState().newHadoopConfWithOptions(h.options());
        long rows = 0;
        try {
            for (FileStatusWithMetadata f : files) rows += rowsOf(f, conf);
        } catch (IOException | RuntimeException unreadable) {
            return null;  // the scan reads the files and reports what is wrong with them as Spark does
        }
        List<Attribute> output = CollectionConverters.asJava(a.output());
        Object[] values = new Object[output.size()];
        java.util.Arrays.fill(values, rows);
        List<InternalRow> data = List.of(new GenericInternalRow(values));
        return new LocalRelation(a.output(), CollectionConverters.asScala(data).toList(), false, scala.Option.empty());
    }

    private static long rowsOf(FileStatusWithMetadata f, Configuration conf) throws IOException {
        ParquetMetadata footer = ParquetFileReader.readFooter(HadoopInputFile.fromStatus(f.fileStatus(), conf),
                ParquetMetadataConverter.NO_FILTER);
        long rows = 0;
        for (BlockMetaData block : footer.getBlocks()) rows += block.getRowCount();
        return rows;
    }

    private static List<Expression> splitConjuncts(Expression cond) {
        if (cond instanceof And and) {
            List<Expression> out = new ArrayList<>(splitConjuncts(and.left()));
            out.addAll(splitConjuncts(and.right()));
            return out;
        }
        return List.of(cond);
    }

    /** The filters with their columns named as the partition schema names them (as Spark's file scan
     *  passes them to a file index). */
    private static List<Expression> normalized(List<Expression> filters, HadoopFsRelation h) {
        List<Expression> out = new ArrayList<>();
        for (Expression e : filters) {
            out.add(e.transform(new AbstractPartialFunction<Expression, Expression>() {
                @Override
                public boolean isDefinedAt(Expression x) {
                    return x instanceof AttributeReference;
                }

                @Override
                public <A1 extends Expression, B1> B1 applyOrElse(A1 x, Function1<A1, B1> fallback) {
                    if (!(x instanceof AttributeReference ref)) return fallback.apply(x);
                    for (StructField f : h.partitionSchema().fields()) {
                        if (f.name().equalsIgnoreCase(ref.name())) {
                            @SuppressWarnings("unchecked")
                            B1 out = (B1) ref.withName(f.name());
                            return out;
                        }
                    }
                    return fallback.apply(x);
                }
            }));
        }
        return out;
    }
}
