package io.ushas.spark;

import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier;
import org.apache.spark.sql.catalyst.plans.logical.CreateView;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.View;
import org.apache.spark.sql.connector.catalog.Identifier;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Refuses a persistent view of an Ushas catalog whose query uses a temporary view or function, with
 * Spark's own {@code INVALID_TEMP_OBJ_REFERENCE}, as Spark does for its session catalog (it does not check
 * V2 views): such a view would not resolve in any other session. An analyzer check rule installed by
 * {@link UshasExtensions}.
 */
final class TempObjectCheck extends AbstractFunction1<LogicalPlan, BoxedUnit> {
    @Override
    public BoxedUnit apply(LogicalPlan plan) {
        if (plan instanceof CreateView cv && cv.child() instanceof ResolvedIdentifier id
                && id.catalog() instanceof UshasCatalog) {
            String function = cv.referredTempFunctions().isEmpty() ? null : cv.referredTempFunctions().head();
            String view = tempView(cv.query());
            if (view != null) throw refusal(id, "VIEW", view);
            if (function != null) throw refusal(id, "FUNCTION", function);
        }
        return BoxedUnit.UNIT;
    }

    /** The first temporary view {@code plan} reads, its subqueries included; null if none. */
    static String tempView(LogicalPlan plan) {
        if (plan instanceof View v && v.isTempView()) return v.desc().identifier().table();
        scala.collection.Iterator<LogicalPlan> children = plan.children().iterator();
        while (children.hasNext()) {
            String found = tempView(children.next());
            if (found != null) return found;
        }
        scala.collection.Iterator<LogicalPlan> subqueries = plan.subqueries().iterator();
        while (subqueries.hasNext()) {
            String found = tempView(subqueries.next());
            if (found != null) return found;
        }
        return null;
    }

    private static RuntimeException refusal(ResolvedIdentifier id, String kind, String name) {
        Identifier ident = id.identifier();
        Map<String, String> params = new LinkedHashMap<>();
        params.put("obj", "VIEW");
        params.put("objName", quoted(id.catalog().name(), UshasCatalog.toParts(ident)));
        params.put("tempObj", kind);
        params.put("tempObjName", quoted(null, new String[] {name}));
        return Errors.sneak(new AnalysisException("INVALID_TEMP_OBJ_REFERENCE",
                scala.collection.immutable.Map$.MODULE$.from(scala.jdk.javaapi.CollectionConverters.asScala(params))));
    }

    private static String quoted(String first, String[] parts) {
        StringBuilder b = new StringBuilder();
        if (first != null) b.append('`').append(first.replace("`", "``")).append('`');
        for (String p : parts) {
            if (!b.isEmpty()) b.append('.');
            b.append('`').append(p.replace("`", "``")).append('`');
        }
        return b.toString();
    }
}
