// Delegation tokens of a real NameNode, with Hadoop 3.3.4's own client:
//
//   java -cp <classes>:<jars> HdfsToken get <hdfs-uri> <user> <renewer> <file>
//       as <user>, asks the NameNode for its delegation token (FileSystem.addDelegationTokens,
//       as MapReduce's and Spark's submitters do) and writes the credentials to <file> in
//       Hadoop's token storage format; prints "token <kind> <service>" per token.
//   java -cp <classes>:<jars> HdfsToken cancel <hdfs-uri> <user> <file>
//       as <user>, cancels every HDFS delegation token in <file>.
import java.io.File;
import java.net.URI;
import java.security.PrivilegedExceptionAction;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.security.token.delegation.DelegationTokenIdentifier;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;

public class HdfsToken {
    public static void main(String[] args) throws Exception {
        if (args.length == 5 && args[0].equals("get")) {
            get(URI.create(args[1]), args[2], args[3], new File(args[4]));
        } else if (args.length == 4 && args[0].equals("cancel")) {
            cancel(URI.create(args[1]), args[2], new File(args[3]));
        } else {
            System.err.println("usage: HdfsToken get <hdfs-uri> <user> <renewer> <file>\n"
                    + "       HdfsToken cancel <hdfs-uri> <user> <file>");
            System.exit(2);
        }
    }

    static void get(URI uri, String user, String renewer, File file) throws Exception {
        Configuration conf = new Configuration();
        Credentials creds = new Credentials();
        UserGroupInformation.createRemoteUser(user).doAs((PrivilegedExceptionAction<Void>) () -> {
            FileSystem fs = FileSystem.get(uri, conf);
            Token<?>[] tokens = fs.addDelegationTokens(renewer, creds);
            if (tokens == null || tokens.length == 0) {
                throw new IllegalStateException("the NameNode issued no delegation token");
            }
            return null;
        });
        creds.writeTokenStorageFile(new Path(file.toURI()), conf);
        for (Token<?> t : creds.getAllTokens()) {
            System.out.println("token " + t.getKind() + " " + t.getService());
        }
    }

    @SuppressWarnings("unchecked")
    static void cancel(URI uri, String user, File file) throws Exception {
        Configuration conf = new Configuration();
        Credentials creds = Credentials.readTokenStorageFile(new Path(file.toURI()), conf);
        UserGroupInformation.createRemoteUser(user).doAs((PrivilegedExceptionAction<Void>) () -> {
            DistributedFileSystem fs = (DistributedFileSystem) FileSystem.get(uri, conf);
            for (Token<?> t : creds.getAllTokens()) {
                if (t.getKind().equals(DelegationTokenIdentifier.HDFS_DELEGATION_KIND)) {
                    fs.getClient().cancelDelegationToken((Token<DelegationTokenIdentifier>) t);
                    System.out.println("cancelled " + t.getService());
                }
            }
            return null;
        });
    }
}
