package io.ushas.spark;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Relation;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What one catalog instance already built, by identifier: the {@link Relation} (an {@link UshasTable} or a
 * view) with the id and version Python described it at, and the table's partition identifiers once listed.
 * Glue only: Python decides whether an entry is still current ({@code load_table} / {@code load_relation}
 * with {@code known} answer {@code unchanged}), and parses the {@code cache.*} options ({@code open}).
 * Least recently used entries go beyond {@code size}; an entry unused for {@code ttl} is gone.
 */
final class RelationCache {
    record Settings(boolean enabled, long ttlMillis, int size, boolean check) {
        static Settings fromJson(JsonNode s) {
            if (s == null || s.isNull()) return new Settings(false, 0, 1, true);
            return new Settings(s.get("enabled").asBoolean(), s.get("ttl_ms").asLong(), s.get("size").asInt(),
                    s.get("check").asBoolean());
        }
    }

    static final class Entry {
        final String id;
        final long version;
        final Relation relation;
        volatile InternalRow[] partitions;
        long used;

        Entry(String id, long version, Relation relation) {
            this.id = id;
            this.version = version;
            this.relation = relation;
        }
    }

    private final Settings settings;
    private final LinkedHashMap<String, Entry> entries;
    private final java.util.concurrent.atomic.AtomicLong unchanged = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong unchecked = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong loaded = new java.util.concurrent.atomic.AtomicLong();

    RelationCache(Settings settings) {
        this.settings = settings;
        this.entries = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Entry> eldest) {
                return size() > settings.size();
            }
        };
    }

    Settings settings() {
        return settings;
    }

    static String key(Identifier ident) {
        return String.join("\u0000", ident.namespace()) + "\u0001" + ident.name();
    }

    /** The live entry for {@code ident}, or null (disabled, absent or idle longer than the ttl). */
    synchronized Entry get(Identifier ident) {
        if (!settings.enabled()) return null;
        String k = key(ident);
        Entry e = entries.get(k);
        if (e == null) return null;
        long now = System.nanoTime();
        if (settings.ttlMillis() > 0 && now - e.used > settings.ttlMillis() * 1_000_000L) {
            entries.remove(k);
            return null;
        }
        e.used = now;
        return e;
    }

    synchronized void put(Identifier ident, String id, long version, Relation relation) {
        if (!settings.enabled() || id == null) return;
        Entry e = new Entry(id, version, relation);
        e.used = System.nanoTime();
        entries.put(key(ident), e);
    }

    synchronized void invalidate(Identifier ident) {
        entries.remove(key(ident));
    }

    synchronized int size() {
        return entries.size();
    }

    /** Counts a lookup: "unchanged" (checked hit), "unchecked" (cache.check=false hit) or "loaded". */
    void count(String outcome) {
        switch (outcome) {
            case "unchanged" -> unchanged.incrementAndGet();
            case "unchecked" -> unchecked.incrementAndGet();
            default -> loaded.incrementAndGet();
        }
    }

    /** Settings, entries and lookup counts, as JSON (tests, benchmarks). */
    synchronized String status() {
        return Json.object().put("enabled", settings.enabled()).put("ttl_ms", settings.ttlMillis())
                .put("size", settings.size()).put("check", settings.check()).put("entries", entries.size())
                .put("unchanged", unchanged.get()).put("unchecked", unchecked.get()).put("loaded", loaded.get())
                .toString();
    }

    /** The full partition listing of {@code table}, when it is the current entry of its identifier. */
    synchronized InternalRow[] partitions(UshasTable table) {
        Entry e = settings.enabled() ? entries.get(key(table.ident())) : null;
        InternalRow[] rows = e != null && e.relation == table ? e.partitions : null;
        return rows == null ? null : rows.clone();
    }

    synchronized void putPartitions(UshasTable table, InternalRow[] rows) {
        Entry e = settings.enabled() ? entries.get(key(table.ident())) : null;
        if (e != null && e.relation == table) e.partitions = rows.clone();
    }
}
