// Reads and writes YARN aggregated log files (the TFile format a NodeManager uploads) with
// Hadoop's own classes, AggregatedLogFormat.LogReader and LogWriter, so the tests can check
// that Spindle's files are what Hadoop reads and that Spindle reads what Hadoop writes
// (integration/tests/aggregated_log_format.rs).
//
//   AggregatedLogTool dump <file>
//       Prints, one item a line, fields separated by tabs:
//         owner   <owner>
//         acl     <access type>   <acl>          (sorted by access type)
//         container       <container id>        (in file order)
//         file    <name>  <length>        <content in hex>
//         end
//       Containers are read with LogReader.next and each one's files with Hadoop's
//       ContainerLogsReader, as the NodeManager's and history server's log pages read them.
//
//   AggregatedLogTool write <file> <owner> [acl:<TYPE>=<acl>]... <containerId>=<dir>...
//       Writes <file> with LogWriter as the NodeManager does: the ACLs (in the order given)
//       and owner, then per container every file of <dir> (LogValue.write: sorted, each
//       name, length and bytes).
import java.io.DataInputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.ApplicationAccessType;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.logaggregation.AggregatedLogFormat.ContainerLogsReader;
import org.apache.hadoop.yarn.logaggregation.AggregatedLogFormat.LogKey;
import org.apache.hadoop.yarn.logaggregation.AggregatedLogFormat.LogReader;
import org.apache.hadoop.yarn.logaggregation.AggregatedLogFormat.LogValue;
import org.apache.hadoop.yarn.logaggregation.AggregatedLogFormat.LogWriter;

public class AggregatedLogTool {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("dump")) {
            dump(args[1]);
        } else if (args.length >= 3 && args[0].equals("write")) {
            write(args[1], args[2], Arrays.copyOfRange(args, 3, args.length));
        } else {
            System.err.println("usage: AggregatedLogTool dump <file>");
            System.err.println("       AggregatedLogTool write <file> <owner> [acl:<TYPE>=<acl>]... <containerId>=<dir>...");
            System.exit(2);
        }
    }

    private static Path localPath(String file) {
        return new Path(new File(file).getAbsoluteFile().toURI());
    }

    private static void dump(String file) throws Exception {
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        LogReader reader = new LogReader(new Configuration(), localPath(file));
        try {
            out.println("owner\t" + reader.getApplicationOwner());
            Map<String, String> acls = new TreeMap<>();
            for (Map.Entry<ApplicationAccessType, String> e : reader.getApplicationAcls().entrySet()) {
                acls.put(e.getKey().toString(), e.getValue());
            }
            for (Map.Entry<String, String> e : acls.entrySet()) {
                out.println("acl\t" + e.getKey() + "\t" + e.getValue());
            }
            LogKey key = new LogKey();
            DataInputStream value = reader.next(key);
            byte[] buf = new byte[65536];
            while (value != null) {
                out.println("container\t" + key);
                ContainerLogsReader logs = new ContainerLogsReader(value);
                for (String name = logs.nextLog(); name != null; name = logs.nextLog()) {
                    long length = logs.getCurrentLogLength();
                    StringBuilder hex = new StringBuilder();
                    long read = 0;
                    for (int n = logs.read(buf, 0, buf.length); n > 0; n = logs.read(buf, 0, buf.length)) {
                        for (int i = 0; i < n; i++) {
                            hex.append(HEX[(buf[i] >> 4) & 0xf]).append(HEX[buf[i] & 0xf]);
                        }
                        read += n;
                    }
                    if (read != length) {
                        throw new IllegalStateException("file " + name + " of " + key + ": read "
                            + read + " of " + length + " bytes");
                    }
                    out.println("file\t" + name + "\t" + length + "\t" + hex);
                }
                value = reader.next(key);
            }
            out.println("end");
        } finally {
            reader.close();
            out.flush();
        }
    }

    private static void write(String file, String owner, String[] items) throws Exception {
        Configuration conf = new Configuration();
        Map<ApplicationAccessType, String> acls = new LinkedHashMap<>();
        ArrayList<String[]> containers = new ArrayList<>();
        for (String item : items) {
            if (item.startsWith("acl:")) {
                String[] kv = item.substring(4).split("=", 2);
                acls.put(ApplicationAccessType.valueOf(kv[0]), kv[1]);
            } else {
                containers.add(item.split("=", 2));
            }
        }
        LogWriter writer = new LogWriter();
        writer.initialize(conf, localPath(file), UserGroupInformation.getCurrentUser());
        try {
            writer.writeApplicationACLs(acls);
            writer.writeApplicationOwner(owner);
            for (String[] container : containers) {
                final File dir = new File(container[1]);
                LogValue value = new LogValue(new ArrayList<String>(),
                    ContainerId.fromString(container[0]), owner) {
                    // The files of <dir> itself instead of <root>/<app>/<container>; the rest
                    // of LogValue (the order, the copy) is Hadoop's.
                    @Override
                    public Set<File> getPendingLogFilesToUploadForThisContainer() {
                        File[] files = dir.listFiles();
                        return new HashSet<File>(Arrays.asList(files == null ? new File[0] : files));
                    }
                };
                writer.append(new LogKey(container[0]), value);
            }
        } finally {
            writer.close();
        }
    }
}
