package io.ushas.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.nativeio.NativeIO;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

/**
 * Hadoop's local file system ({@code file:}) with the permission of a created file or directory set by a
 * {@code chmod} system call ({@link Files#setPosixFilePermissions}) instead of a forked {@code chmod}
 * process. Without Hadoop's native library, {@link RawLocalFileSystem#setPermission} runs
 * {@code chmod} as a child process, and every file create (the data file and its {@code .crc}) and every
 * mkdirs with a permission calls it: on a many-partition write that fork is most of the task side's time
 * (docs/benchmarks.md). Same permissions (Hadoop still computes them: default, umask), same checksum
 * files, same everything else; a permission the JDK cannot express (sticky bit) and a file system without
 * POSIX attributes fall back to Hadoop's own way.
 *
 * <p>Used for the writes of an Ushas catalog table only: {@link #use} sets it in the write job's Hadoop
 * configuration, uncached (Hadoop's file system cache is keyed by scheme and user, not by configuration,
 * so a cached {@code LocalFileSystem} would otherwise be handed out).
 */
public class LocalFiles extends LocalFileSystem {
    static final String IMPL = "fs.file.impl";
    static final String NO_CACHE = "fs.file.impl.disable.cache";
    /** a write option / table option {@code option.ushas.write.forklessLocalFiles=false} turns it off */
    static final String SWITCH = "ushas.write.forklessLocalFiles";

    public LocalFiles() {
        super(new Raw());
    }

    /** Makes {@code conf} (a write job's configuration) open {@code file:} paths with this class, unless
     *  the user chose another local file system class or Hadoop's native library is there (then Hadoop
     *  sets permissions without a fork itself) or the write turned it off or the configuration's class
     *  loader cannot load this class. Whether it was set. */
    static boolean use(Configuration conf, boolean enabled) {
        if (!enabled || NativeIO.isAvailable()) return false;
        String impl = conf.get(IMPL);
        if (impl != null && !impl.equals(LocalFileSystem.class.getName()) && !impl.equals(LocalFiles.class.getName())) {
            return false;
        }
        // Hadoop loads the class by name through the configuration's class loader: one that cannot see the
        // shim (a configuration made before the shim's jar was added) keeps Hadoop's own
        if (conf.getClassByNameOrNull(LocalFiles.class.getName()) != LocalFiles.class) return false;
        conf.set(IMPL, LocalFiles.class.getName());
        conf.setBoolean(NO_CACHE, true);
        return true;
    }

    /** The raw local file system whose {@link #setPermission} is a system call. */
    public static class Raw extends RawLocalFileSystem {
        @Override
        public void setPermission(Path p, FsPermission permission) throws IOException {
            Set<PosixFilePermission> perms = posix(permission);
            if (perms == null) {
                super.setPermission(p, permission);
                return;
            }
            try {
                Files.setPosixFilePermissions(pathToFile(p).toPath(), perms);
            } catch (UnsupportedOperationException noPosix) {
                super.setPermission(p, permission);
            } catch (java.nio.file.NoSuchFileException gone) {
                throw new java.io.FileNotFoundException("File " + p + " does not exist");
            }
        }
    }

    /** The JDK's form of a permission; null when it has bits the JDK cannot set (sticky bit). */
    static Set<PosixFilePermission> posix(FsPermission permission) {
        if (permission.getStickyBit()) return null;
        Set<PosixFilePermission> out = EnumSet.noneOf(PosixFilePermission.class);
        add(out, permission.getUserAction(), PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
                PosixFilePermission.OWNER_EXECUTE);
        add(out, permission.getGroupAction(), PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
                PosixFilePermission.GROUP_EXECUTE);
        add(out, permission.getOtherAction(), PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE,
                PosixFilePermission.OTHERS_EXECUTE);
        return out;
    }

    private static void add(Set<PosixFilePermission> out, FsAction action, PosixFilePermission read,
                            PosixFilePermission write, PosixFilePermission execute) {
        if (action.implies(FsAction.READ)) out.add(read);
        if (action.implies(FsAction.WRITE)) out.add(write);
        if (action.implies(FsAction.EXECUTE)) out.add(execute);
    }
}
