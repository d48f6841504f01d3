// A real HDFS in one JVM for the tests and for people: Hadoop's MiniDFSCluster (a NameNode and
// DataNodes from hadoop-client-minicluster) on a given NameNode port and base directory,
// serving until the process is stopped. Started by integration/bin/hdfs (and through it by
// the test harness, integration/src/hdfs.rs).
//
//   java -cp <classes>:<jars> MiniHdfs <port> <dir> [<datanodes>]
//
// The first start formats <dir>; a later start on the same <dir> keeps the namespace and the
// blocks, as a restarted cluster does. Once the NameNode is out of safe mode and every
// DataNode has registered it prints one line, "MiniHdfs serving hdfs://127.0.0.1:<port>/ ...",
// on standard output.
import java.io.File;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.MiniDFSCluster;

public class MiniHdfs {
    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 3) {
            System.err.println("usage: MiniHdfs <port> <dir> [<datanodes>]");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        File dir = new File(args[1]).getAbsoluteFile();
        int dataNodes = args.length == 3 ? Integer.parseInt(args[2]) : 1;
        // MiniDFSCluster keeps the NameNode's and DataNodes' directories under <dir>/data.
        boolean fresh = !new File(dir, "data").exists();

        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, dir.getPath());
        conf.setInt("dfs.replication", Math.min(dataNodes, 3));
        // Clients (and the NodeManager's localizer) reach the DataNodes by the address the
        // NameNode reports; the loopback address works on any machine.
        conf.set("dfs.datanode.hostname", "127.0.0.1");
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        // The NameNode issues and checks delegation tokens as a secured one does, though its
        // clients authenticate simply (no Kerberos here): a client holding a token for it then
        // authenticates with the token (SASL DIGEST-MD5), and the NameNode knows it as the
        // token's owner.
        conf.setBoolean("dfs.namenode.delegation.token.always-use", true);

        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
                .nameNodePort(port)
                .numDataNodes(dataNodes)
                .format(fresh)
                .manageNameDfsDirs(true)
                .manageDataDfsDirs(true)
                .build();
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
        cluster.waitActive();
        cluster.waitClusterUp();

        if (fresh) {
            // As on a cluster set up for YARN: a world-writable /tmp (Spark and MapReduce
            // staging, aggregated logs) and /user, sticky so that users keep their own.
            FileSystem fs = cluster.getFileSystem();
            FsPermission shared = new FsPermission((short) 01777);
            for (String p : new String[] {"/tmp", "/user"}) {
                fs.mkdirs(new Path(p));
                fs.setPermission(new Path(p), shared);
            }
        }
        String web = cluster.getNameNode().getHttpAddress().toString();
        System.out.println("MiniHdfs serving hdfs://127.0.0.1:" + cluster.getNameNodePort()
                + "/ with " + dataNodes + " DataNode(s), NameNode web " + web + ", data in " + dir);
        System.out.flush();
        Thread.currentThread().join();
    }
}
