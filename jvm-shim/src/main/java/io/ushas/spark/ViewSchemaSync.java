package io.ushas.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.SchemaEvolution$;
import org.apache.spark.sql.catalyst.analysis.SchemaTypeEvolution$;
import org.apache.spark.sql.catalyst.analysis.ViewSchemaMode;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.View;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.V1Table$;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractPartialFunction;

import java.util.Objects;

/**
 * Schema evolution of an Ushas view ({@code WITH SCHEMA EVOLUTION} / {@code TYPE EVOLUTION}), a post-hoc
 * resolution rule of {@link UshasExtensions}. Spark 4.3's own {@code ViewSyncSchemaToMetaStore} (a check
 * rule) stores a view's new schema with {@code SessionCatalog.alterTable}, whatever the view's catalog: for a
 * view of a V2 catalog that always fails ({@code FAILED_UPDATE_VIEW_SCHEMA}, caused by {@code SCHEMA_NOT_FOUND
 * spark_catalog.db}). This rule runs first: for each persisted view of an Ushas catalog whose query no longer
 * matches its stored schema it computes the schema exactly as Spark's rule does, has the catalog commit it
 * (a new view version) and puts the stored view back in the plan, so Spark's check finds nothing to do.
 */
final class ViewSchemaSync extends Rule<LogicalPlan> {
    private final SparkSession session;

    ViewSchemaSync(SparkSession session) {
        this.session = session;
    }

    static AbstractFunction1<SparkSession, Rule<LogicalPlan>> factory() {
        return new AbstractFunction1<>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession s) {
                return new ViewSchemaSync(s);
            }
        };
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        return plan.transformUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan p) {
                return p instanceof View v && catalogOf(v) != null && v.child().resolved() && outOfSync(v);
            }

            @Override
            public LogicalPlan apply(LogicalPlan p) {
                return sync((View) p);
            }
        });
    }

    private UshasCatalog catalogOf(View v) {
        if (v.isTempView()) return null;
        ViewSchemaMode mode = v.desc().viewSchemaMode();
        if (mode != SchemaEvolution$.MODULE$ && mode != SchemaTypeEvolution$.MODULE$) return null;
        scala.Option<String> name = v.desc().identifier().catalog();
        if (name.isEmpty()) return null;
        try {
            CatalogPlugin c = session.sessionState().catalogManager().catalog(name.get());
            return c instanceof UshasCatalog u ? u : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** Spark's test (ViewSyncSchemaToMetaStore): a type or nullability changed; under EVOLUTION also a
     *  name, a comment or the number of columns. */
    private static boolean outOfSync(View v) {
        boolean evolution = v.desc().viewSchemaMode() == SchemaEvolution$.MODULE$;
        StructField[] stored = v.desc().schema().fields();
        StructField[] query = v.child().schema().fields();
        if (evolution && stored.length != query.length) return true;
        if (query.length < stored.length) return false;  // Spark fails the view itself
        for (int i = 0; i < stored.length; i++) {
            StructField f = stored[i];
            StructField q = query[i];
            if (!f.dataType().equals(q.dataType()) || f.nullable() != q.nullable()) return true;
            if (evolution && (!f.getComment().equals(q.getComment()) || !f.name().equals(q.name()))) return true;
        }
        return false;
    }

    private View sync(View v) {
        CatalogTable desc = v.desc();
        boolean evolution = desc.viewSchemaMode() == SchemaEvolution$.MODULE$;
        StructType query = v.child().schema();
        StructType schema;
        String[] columns;
        if (evolution) {
            schema = query;
            columns = query.fieldNames();
        } else {  // TYPE EVOLUTION: the query's types, the stored names' metadata
            StructField[] stored = desc.schema().fields();
            StructField[] out = new StructField[query.fields().length];
            for (int i = 0; i < out.length; i++) {
                StructField q = query.fields()[i];
                Metadata md = Metadata.empty();
                for (StructField s : stored) if (Objects.equals(s.name(), q.name())) md = s.metadata();
                out[i] = new StructField(q.name(), q.dataType(), q.nullable(), md);
            }
            schema = new StructType(out);
            columns = null;
        }
        String db = desc.identifier().database().isDefined() ? desc.identifier().database().get() : null;
        Identifier ident = Identifier.of(db == null ? new String[0] : new String[] {db}, desc.identifier().table());
        UshasCatalog catalog = catalogOf(v);
        org.apache.spark.sql.connector.catalog.View stored =
                catalog.syncViewSchema(ident, schema, columns, desc.viewSchemaMode().toString());
        CatalogTable updated = V1Table$.MODULE$.toCatalogTable(catalog, ident, stored);
        return new View(updated, false, v.child(), v.options());
    }
}
