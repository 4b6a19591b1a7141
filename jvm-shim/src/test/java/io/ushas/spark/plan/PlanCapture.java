package io.ushas.spark.plan;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.util.QueryExecutionListener;

/**
 * Keeps the analyzed plans of the last queries a session executed (bounded), for tests and tools
 * that need the analyzed plan of an action they cannot analyze up front, e.g.
 * {@code DataFrameWriter.save(path)}. Register with
 * {@code spark.listenerManager().register(new PlanCapture(16))}; events arrive asynchronously.
 */
public final class PlanCapture implements QueryExecutionListener {
    private final int capacity;
    private final List<String[]> events = new ArrayList<>();
    private final List<LogicalPlan> plans = new ArrayList<>();

    public PlanCapture(int capacity) {
        this.capacity = capacity;
    }

    @Override
    public synchronized void onSuccess(String funcName, QueryExecution qe, long durationNs) {
        if (plans.size() == capacity) {
            plans.remove(0);
            events.remove(0);
        }
        plans.add(qe.analyzed());
        events.add(new String[] {funcName, qe.analyzed().nodeName()});
    }

    @Override
    public void onFailure(String funcName, QueryExecution qe, Exception exception) {}

    public synchronized int size() {
        return plans.size();
    }

    public synchronized LogicalPlan plan(int i) {
        return plans.get(i);
    }

    /** funcName of event i (e.g. "save", "command", "insertInto"). */
    public synchronized String funcName(int i) {
        return events.get(i)[0];
    }

    /** Node name of the analyzed plan's root of event i. */
    public synchronized String rootName(int i) {
        return events.get(i)[1];
    }

    public synchronized void clear() {
        plans.clear();
        events.clear();
    }
}
