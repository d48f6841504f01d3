// An RM delegation token through Hadoop's own client classes: YarnClient asks
// for it, Token.renew and Token.cancel go through the RM_DELEGATION_TOKEN
// TokenRenewer Hadoop registers, and a process holding only the token (in
// HADOOP_TOKEN_FILE_LOCATION, no Kerberos ticket) calls the RM with it.
//
// Usage:
//   RmToken fetch --renewer R --out FILE   prints owner=, renewer=, realUser= of the token
//                                          and writes it to FILE (Hadoop's credentials format)
//   RmToken renew --in FILE                prints expires=<ms>
//   RmToken cancel --in FILE               prints cancelled
//   RmToken apps                           prints user=<short name> auth=<method> apps=<count>
// Exit status 0 on success; 1 with the exception (class: message) on stderr otherwise.

import java.io.File;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.client.ClientRMProxy;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.security.client.RMDelegationTokenIdentifier;
import org.apache.hadoop.yarn.util.ConverterUtils;

public final class RmToken {
    private RmToken() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage("a command is required");
        }
        Configuration conf = new YarnConfiguration();
        UserGroupInformation.setConfiguration(conf);
        try {
            switch (args[0]) {
                case "fetch":
                    fetch(conf, opt(args, "--renewer"), opt(args, "--out"));
                    break;
                case "renew":
                    System.out.println("expires=" + read(conf, opt(args, "--in")).renew(conf));
                    break;
                case "cancel":
                    read(conf, opt(args, "--in")).cancel(conf);
                    System.out.println("cancelled");
                    break;
                case "apps":
                    apps(conf);
                    break;
                default:
                    usage("unknown command " + args[0]);
            }
        } catch (Exception e) {
            System.err.println(e.getClass().getName() + ": " + e.getMessage());
            System.exit(1);
        }
    }

    private static void fetch(Configuration conf, String renewer, String out) throws Exception {
        YarnClient client = YarnClient.createYarnClient();
        client.init(conf);
        client.start();
        try {
            org.apache.hadoop.yarn.api.records.Token yarnToken =
                client.getRMDelegationToken(new Text(renewer));
            Token<RMDelegationTokenIdentifier> token = ConverterUtils.convertFromYarn(
                yarnToken, ClientRMProxy.getRMDelegationTokenService(conf));
            RMDelegationTokenIdentifier id = token.decodeIdentifier();
            Credentials credentials = new Credentials();
            credentials.addToken(token.getService(), token);
            credentials.writeTokenStorageFile(new Path(new File(out).toURI()), conf);
            System.out.println("owner=" + id.getOwner() + " renewer=" + id.getRenewer()
                + " realUser=" + id.getRealUser() + " kind=" + token.getKind()
                + " service=" + token.getService());
        } finally {
            client.stop();
        }
    }

    private static Token<?> read(Configuration conf, String in) throws Exception {
        Credentials credentials =
            Credentials.readTokenStorageFile(new Path(new File(in).toURI()), conf);
        for (Token<?> token : credentials.getAllTokens()) {
            if (token.getKind().equals(RMDelegationTokenIdentifier.KIND_NAME)) {
                return token;
            }
        }
        throw new IllegalStateException("no RM_DELEGATION_TOKEN in " + in);
    }

    private static void apps(Configuration conf) throws Exception {
        YarnClient client = YarnClient.createYarnClient();
        client.init(conf);
        client.start();
        try {
            List<ApplicationReport> reports = client.getApplications();
            UserGroupInformation ugi = UserGroupInformation.getCurrentUser();
            System.out.println("user=" + ugi.getShortUserName() + " tokens="
                + ugi.getTokens().size() + " apps=" + reports.size());
        } finally {
            client.stop();
        }
    }

    private static String opt(String[] args, String name) {
        for (int i = 1; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return args[i + 1];
            }
        }
        usage(name + " is required");
        return null;
    }

    private static void usage(String why) {
        System.err.println("RmToken: " + why);
        System.exit(2);
    }
}
