package io.ushas.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.nativeio.NativeIO;
import org.junit.jupiter.api.Test;

class LocalFilesTest {
    @Test
    void permissionsMapBitForBit() {
        String[][] cases = {{"644", "rw-r--r--"}, {"755", "rwxr-xr-x"}, {"600", "rw-------"}, {"000", "---------"},
                            {"777", "rwxrwxrwx"}, {"421", "r---w---x"}};
        for (String[] c : cases) {
            assertEquals(c[1], PosixFilePermissions.toString(LocalFiles.posix(new FsPermission(c[0]))), c[0]);
        }
        assertNull(LocalFiles.posix(new FsPermission("1777")), "the sticky bit goes through Hadoop's own way");
    }

    @Test
    void createsLikeHadoopsLocalFileSystem() throws Exception {
        java.nio.file.Path dir = Files.createTempDirectory("localfiles");
        Configuration conf = new Configuration(false);
        assertEquals(!NativeIO.isAvailable(), LocalFiles.use(conf, true));
        FileSystem theirs = new LocalFileSystem();
        theirs.initialize(java.net.URI.create("file:///"), new Configuration(false));
        FileSystem mine = new LocalFiles();
        mine.initialize(java.net.URI.create("file:///"), conf);
        for (FileSystem fs : new FileSystem[] {theirs, mine}) {
            String tag = fs == mine ? "mine" : "theirs";
            try (FSDataOutputStream out = fs.create(new Path(dir.toString(), tag + "/p=1/f"), true)) {
                out.write(1);
            }
            fs.mkdirs(new Path(dir.toString(), tag + "/made"), new FsPermission("750"));
        }
        for (String rel : new String[] {"p=1/f", "p=1/.f.crc", "p=1", "made"}) {
            assertEquals(Files.getPosixFilePermissions(dir.resolve("theirs/" + rel)),
                    Files.getPosixFilePermissions(dir.resolve("mine/" + rel)), rel);
        }
        assertEquals("rwxr-x---", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("mine/made"))));
        mine.setPermission(new Path(dir.toString(), "mine/p=1/f"), new FsPermission("600"));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("mine/p=1/f"))));
        assertThrows(FileNotFoundException.class,
                () -> mine.setPermission(new Path(dir.toString(), "mine/none"), new FsPermission("600")));
    }

    @Test
    void onlyInPlaceOfHadoopsOwnLocalFileSystem() {
        Configuration off = new Configuration(false);
        assertFalse(LocalFiles.use(off, false), "turned off by the write option");
        assertNull(off.get(LocalFiles.IMPL));
        Configuration custom = new Configuration(false);
        custom.set(LocalFiles.IMPL, "com.example.MyLocalFileSystem");
        assertFalse(LocalFiles.use(custom, true), "a user's own file: implementation is kept");
        assertEquals("com.example.MyLocalFileSystem", custom.get(LocalFiles.IMPL));
        Configuration plain = new Configuration(false);
        if (!NativeIO.isAvailable()) {
            assertTrue(LocalFiles.use(plain, true));
            assertEquals(LocalFiles.class.getName(), plain.get(LocalFiles.IMPL));
            assertTrue(plain.getBoolean(LocalFiles.NO_CACHE, false), "uncached: the cache would hand out Hadoop's");
        }
    }
}
