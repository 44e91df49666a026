/* The parameter table (see params.h) and the value parsers. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "config.h"
#include "tbucket.h"
#include "file.h"
#include "htable.h"
#include "log.h"
#include "mem.h"
#include "milter.h"
#include "params.h"
#include "pconfig.h"
#include "sasl_opts.h"

static bool check_feedback(const char *value, str_t *why);
static bool check_rate(const char *value, str_t *why);
static bool check_protocols(const char *value, str_t *why);
static bool check_host_lookup(const char *value, str_t *why);
static bool check_reply_code(const char *value, str_t *why);
static bool check_sasl_options(const char *value, str_t *why);
static bool check_milters(const char *value, str_t *why);
static bool check_milter_action(const char *value, str_t *why);
static const char *compute_mydomain(void);

#define UNL LONG_MAX

#define P_STR(n, d, ds) \
	{ .name = n, .type = PARAM_STR, .defval = d, .desc = ds }
#define P_STRF(n, d, fl, ds) \
	{ .name = n, .type = PARAM_STR, .defval = d, .flags = fl, .desc = ds }
#define P_CHOICE(n, d, ch, ds) \
	{ .name = n, .type = PARAM_STR, .defval = d, .choices = ch, .desc = ds }
#define P_CHECK(n, d, fn, fl, ds) \
	{ .name = n, .type = PARAM_STR, .defval = d, .check = fn, .flags = fl, .desc = ds }
#define P_INT(n, d, lo, hi, fl, ds) \
	{ .name = n, .type = PARAM_INT, .defval = d, .min = lo, .max = hi, \
	  .flags = fl, .desc = ds }
#define P_BOOL(n, d, ds) \
	{ .name = n, .type = PARAM_BOOL, .defval = d, .desc = ds }
#define P_TIME(n, d, u, fl, ds) \
	{ .name = n, .type = PARAM_TIME, .defval = d, .min = 0, .max = UNL, \
	  .unit = u, .flags = fl, .desc = ds }
#define P_TIMER(n, d, u, lo, fl, ds) \
	{ .name = n, .type = PARAM_TIME, .defval = d, .min = lo, .max = UNL, \
	  .unit = u, .flags = fl, .desc = ds }
#define P_SIZE(n, d, ds) \
	{ .name = n, .type = PARAM_SIZE, .defval = d, .min = 0, .max = UNL, .desc = ds }
#define P_BUILD(n, d, dd, ds) \
	{ .name = n, .type = PARAM_STR, .defval = d, .flags = PARAM_F_BUILD, \
	  .defdesc = dd, .desc = ds }
#define P_COMPUTED(n, fn, dd, ds) \
	{ .name = n, .type = PARAM_STR, .compute = fn, .flags = PARAM_F_COMPUTED, \
	  .defdesc = dd, .desc = ds }

#define TR PARAM_F_TRANSPORT

/* SASL security properties of the smtp client: any of these words, or
 * none (smtpd's options take the same words: sasl_opts.h). */
static bool check_smtp_sasl_options(const char *value, str_t *why)
{
	unsigned mask;
	size_t n;

	if (sasl_opts_scan(value, &mask, &n) == NULL)
		return true;
	str_set(why, "words from noplaintext, noanonymous, noactive, "
	    "nodictionary, mutual_auth, forward_secrecy");
	return false;
}

static const param_def_t table[] = {
	/* Installation: compiled-in defaults from ./configure. */
	P_BUILD("config_directory", DEF_CONFIG_DIR, "SYSCONFDIR (configure --sysconfdir; PREFIX/etc/petrel if not given)",
	    "Where main.cf and master.cf are; set by -c or MAIL_CONFIG, not in main.cf."),
	P_BUILD("queue_directory", DEF_QUEUE_DIR, "LOCALSTATEDIR/spool/petrel (configure --localstatedir)",
	    "The root of the mail queue; also the chroot directory of chrooted daemons."),
	P_BUILD("daemon_directory", DEF_DAEMON_DIR, "LIBEXECDIR/petrel (configure --libexecdir)",
	    "Where the daemon programs started by master are installed."),
	P_BUILD("command_directory", DEF_COMMAND_DIR, "SBINDIR (configure --sbindir)",
	    "Where the administrative commands are installed."),
	P_BUILD("mail_owner", DEF_MAIL_OWNER, "petrel (configure --with-mail-owner)",
	    "The unprivileged account the daemons run as; owns the queue."),
	P_BUILD("setgid_group", DEF_SETGID_GROUP, "petrdrop (configure --with-setgid-group)",
	    "The group of the set-gid postdrop and postq programs and of the public sockets."),
	P_STR("sendmail_path", "$command_directory/sendmail",
	    "The sendmail compatibility program, used to re-inject mail."),
	P_STR("process_id_directory", "pid",
	    "Where master keeps its lock and pid files, relative to queue_directory."),
	P_STR("mail_name", "Petrel",
	    "The name of the mail system, used in the SMTP greeting and in notices."),
	P_BUILD("mail_version", PETREL_VERSION, "the version of this build",
	    "The version of the mail system."),

	/* Identity of this host and of its mail domain. */
	P_COMPUTED("myhostname", param_system_hostname,
	    "the system's host name, fully qualified from /etc/hosts when listed there (never DNS)",
	    "The fully qualified name of this host."),
	P_COMPUTED("mydomain", compute_mydomain,
	    "$myhostname without its first label, or localdomain",
	    "The mail domain of this host."),
	P_STR("myorigin", "$myhostname",
	    "The domain appended to locally posted mail without a domain; a path (/etc/mailname): the first line of that file, as in Debian's Postfix."),
	P_STR("mydestination", "$myhostname, localhost.$mydomain, localhost",
	    "Domains delivered locally (by local_transport)."),
	P_STR("mynetworks", "127.0.0.0/8 [::1]/128",
	    "Client networks trusted to relay through this host."),
	P_STR("inet_interfaces", "all",
	    "Addresses to listen on for inet services in master.cf (all, loopback-only or a list)."),
	P_STR("proxy_interfaces", "",
	    "Addresses of NAT devices or proxies that forward mail to this host; [address] domains naming them are local."),
	P_CHECK("inet_protocols", "all", check_protocols, 0,
	    "IP versions used for listening and delivery: all, ipv4, ipv6 or ipv4, ipv6."),
	P_BOOL("append_at_myorigin", "yes",
	    "Append @$myorigin to addresses without a domain."),
	P_BOOL("append_dot_mydomain", "no",
	    "Append .$mydomain to domains without a dot."),
	P_STR("masquerade_domains", "",
	    "Domains whose subdomains are stripped from header addresses."),

	/* Routing. */
	P_STR("relayhost", "",
	    "Default next hop for non-local mail ([host]:port suppresses MX lookups); empty means direct delivery."),
	P_STR("relay_domains", "",
	    "Domains this host relays mail to from anywhere."),
	P_STR("transport_maps", "",
	    "Lookup tables mapping domains or addresses to transport:nexthop."),
	P_STR("default_transport", "smtp",
	    "Transport for mail to domains that are neither local nor relayed."),
	P_STR("local_transport", "local:$myhostname",
	    "Transport for mail to mydestination."),
	P_STR("relay_transport", "relay",
	    "Transport for mail to relay_domains."),
	P_STR("virtual_mailbox_domains", "$virtual_mailbox_maps",
	    "Domains whose recipients have mailboxes on this host without being UNIX users (delivered by virtual_transport, validated against virtual_mailbox_maps)."),
	P_STR("virtual_mailbox_maps", "",
	    "Tables of the valid recipients of virtual_mailbox_domains (user@domain or @domain keys); unknown ones are rejected at RCPT (empty: accept all)."),
	P_STR("virtual_transport", "virtual",
	    "Transport[:nexthop] for mail to virtual_mailbox_domains, e.g. lmtp:unix:private/dovecot-lmtp (Petrel has no virtual agent: this must name a master.cf service; petrel check warns when it does not)."),
	P_INT("unknown_virtual_mailbox_reject_code", "550", 400, 599, 0,
	    "SMTP reply code for an unknown recipient of virtual_mailbox_domains."),
	P_STR("virtual_alias_domains", "$virtual_alias_maps",
	    "Domains whose every address is an alias in virtual_alias_maps; other recipients there are unknown (rejected at RCPT, bounced when they get in)."),
	P_INT("unknown_virtual_alias_reject_code", "550", 400, 599, 0,
	    "SMTP reply code for an unknown recipient of virtual_alias_domains."),
	P_STR("defer_transports", "",
	    "Transports whose mail is deferred instead of delivered, until a flush."),
	P_STR("empty_address_recipient", "MAILER-DAEMON",
	    "Recipient of mail addressed to the null address."),

	/* Address rewriting (cleanup). */
	P_STR("canonical_maps", "",
	    "Lookup tables rewriting envelope and header addresses."),
	P_STR("sender_canonical_maps", "",
	    "Lookup tables rewriting sender addresses."),
	P_STR("recipient_canonical_maps", "",
	    "Lookup tables rewriting recipient addresses."),
	P_STR("virtual_alias_maps", "",
	    "Lookup tables redirecting recipients to other addresses."),

	/* Content checks (cleanup). */
	P_STR("header_checks", "",
	    "Tables (regexp:, pcre:) each logical header of the primary message header (MIME headers excepted) is looked up in; the answer is an action (REJECT, WARN, DISCARD, HOLD, REDIRECT, FILTER, IGNORE, PREPEND, REPLACE, DUNNO, OK)."),
	P_STR("mime_header_checks", "$header_checks",
	    "Tables for the MIME headers (Content-*, MIME-Version) of the message and of its parts, and the other headers of MIME parts; actions as header_checks (IGNORE, PREPEND, REPLACE only in the primary header)."),
	P_STR("nested_header_checks", "$header_checks",
	    "Tables for the headers (other than MIME headers) of messages attached as message/rfc822 parts; actions REJECT, WARN, DISCARD, HOLD, REDIRECT, FILTER, DUNNO, OK."),
	P_STR("body_checks", "",
	    "Tables (regexp:, pcre:) each body line (not MIME part headers) is looked up in; the answer is an action (REJECT, WARN, DISCARD, HOLD, REDIRECT, FILTER, DUNNO, OK)."),
	P_SIZE("body_checks_size_limit", "51200",
	    "How many bytes of each body segment (the main body, each MIME part) body_checks look at."),
	/* After-queue content filters (doc/content-filter.md). */
	P_STR("content_filter", "",
	    "transport:nexthop every message received by smtpd or pickup is sent to after it is queued, instead of its recipients' destinations (per service with master.cf -o content_filter=...; empty: none). Bounce notices get none."),
	P_STR("default_filter_nexthop", "",
	    "Nexthop for a content_filter or FILTER that names none (transport:); empty: the recipient's domain."),
	P_STR("receive_override_options", "",
	    "What smtpd and pickup turn off for the mail they receive: no_unknown_recipient_checks, no_header_body_checks, no_address_mappings, no_milters (for the reinjection service of a content filter, or before one)."),
	P_INT("virtual_alias_expansion_limit", "1000", 1, UNL, 0,
	    "Most addresses one recipient may expand to through virtual_alias_maps."),
	P_INT("virtual_alias_recursion_limit", "1000", 1, UNL, 0,
	    "Deepest nesting of virtual alias expansion."),
	P_BOOL("enable_original_recipient", "yes",
	    "Keep the original recipient address for DSN and logging."),

	/* Milters (libglobal/milter.c, doc/milter.md). */
	P_CHECK("smtpd_milters", "", check_milters, 0,
	    "Milters (inet:host:port, unix:/path, or { address, name=value ... }) smtpd asks at each stage of an SMTP session."),
	P_CHECK("non_smtpd_milters", "", check_milters, 0,
	    "Milters cleanup asks about mail that did not come by SMTP (sendmail, pickup); not bounce notices."),
	P_CHECK("milter_default_action", "tempfail", check_milter_action, 0,
	    "What a milter that cannot be reached, times out or breaks the protocol stands for: tempfail, accept, reject or quarantine."),
	P_INT("milter_protocol", "6", 2, 6, 0,
	    "The milter protocol version offered to milters (2 to 6)."),
	P_TIMER("milter_connect_timeout", "30s", 's', 1, 0,
	    "Time limit for connecting to a milter and negotiating with it."),
	P_TIMER("milter_command_timeout", "30s", 's', 1, 0,
	    "Time limit for a milter's reply to a command (connect, helo, mail, rcpt, data)."),
	P_TIMER("milter_content_timeout", "300s", 's', 1, 0,
	    "Time limit for a milter's reply to message content (headers, body, end of message)."),
	P_STR("milter_connect_macros", "j {daemon_name} {daemon_addr} v _",
	    "Macros sent to milters with the connection."),
	P_STR("milter_helo_macros", "{tls_version} {cipher} {cipher_bits} {cert_subject} {cert_issuer}",
	    "Macros sent to milters with HELO/EHLO."),
	P_STR("milter_mail_macros", "i {auth_type} {auth_authen} {auth_author} {mail_addr} {mail_host} {mail_mailer}",
	    "Macros sent to milters with MAIL FROM."),
	P_STR("milter_rcpt_macros", "i {rcpt_addr} {rcpt_host} {rcpt_mailer}",
	    "Macros sent to milters with RCPT TO."),
	P_STR("milter_data_macros", "i",
	    "Macros sent to milters with DATA."),
	P_STR("milter_end_of_header_macros", "i",
	    "Macros sent to milters at the end of the message header."),
	P_STR("milter_end_of_data_macros", "i",
	    "Macros sent to milters at the end of the message."),
	P_STR("milter_unknown_command_macros", "",
	    "Macros sent to milters with an unknown SMTP command."),
	P_STR("milter_macro_daemon_name", "$myhostname",
	    "The value of the {daemon_name} macro."),
	P_STR("milter_macro_v", "$mail_name $mail_version",
	    "The value of the v macro."),

	/* Local delivery. */
	P_STR("alias_maps", "hash:/etc/aliases",
	    "Alias tables used by local delivery."),
	P_STR("alias_database", "hash:/etc/aliases",
	    "Alias databases rebuilt by newaliases."),
	P_STR("local_recipient_maps", "unix:passwd.byname $alias_maps",
	    "Tables of known local recipients; unknown ones are rejected (empty: accept all)."),
	P_INT("unknown_local_recipient_reject_code", "550", 400, 599, 0,
	    "SMTP reply code for an unknown local recipient."),
	P_STR("recipient_delimiter", "",
	    "Characters separating a user name from an address extension (user+ext)."),
	P_STR("home_mailbox", "",
	    "Mailbox relative to the home directory (Maildir/ ends with a slash); empty: mail_spool_directory."),
	P_STR("mail_spool_directory", "/var/mail",
	    "Directory of the users' mbox mailboxes."),
	P_STRF("mailbox_command", "", PARAM_F_RAW,
	    "Command that delivers to the mailbox instead of local ($user, $home... expanded at delivery)."),
	P_STR("mailbox_delivery_lock", "fcntl, dotlock",
	    "How mbox mailboxes are locked."),
	P_SIZE("mailbox_size_limit", "51200000",
	    "Largest mailbox or mailbox file local may append to (0: no limit)."),
	P_STRF("forward_path", "$home/.forward${recipient_delimiter}${extension}, $home/.forward",
	    PARAM_F_RAW,
	    "Where local looks for a user's .forward file ($home, $user... expanded at delivery)."),
	P_STR("allow_mail_to_commands", "alias, forward",
	    "Where |command destinations are allowed (alias, forward, include)."),
	P_STR("allow_mail_to_files", "alias, forward",
	    "Where /file destinations are allowed (alias, forward, include)."),
	P_STR("default_privs", "nobody",
	    "Account used for deliveries to commands and files on behalf of root-owned aliases."),
	P_TIME("command_time_limit", "1000s", 's', 0,
	    "Time limit of a command run by local delivery."),
	P_STR("prepend_delivered_header", "command, file, forward",
	    "Deliveries that get a Delivered-To: header."),
	P_BOOL("owner_request_special", "yes",
	    "Give owner-X and X-request aliases their mailing list meaning."),
	P_BOOL("expand_owner_alias", "no",
	    "Expand owner-X aliases instead of using them as the sender."),
	P_STRF("luser_relay", "", PARAM_F_RAW,
	    "Where mail for unknown local users goes ($user expanded at delivery); empty: bounce."),
	P_STR("local_mail_root", "",
	    "Private instance: local users are the directories under this one (their homes); empty: the password database."),
	P_INT("duplicate_filter_limit", "1000", 0, UNL, 0,
	    "Addresses remembered for duplicate removal in local and cleanup."),

	/* Message limits. */
	P_SIZE("message_size_limit", "10240000",
	    "Largest message accepted, envelope and headers included (0: no limit)."),
	P_SIZE("header_size_limit", "102400",
	    "Largest message header; cleanup rejects a message with a larger one."),
	P_INT("cleanup_recipient_limit", "10000", 1, UNL, 0,
	    "Most recipients of one message in cleanup, after alias expansion and duplicate removal."),
	P_INT("hopcount_limit", "50", 1, UNL, 0,
	    "Most Received: headers before a message is considered looping."),
	P_INT("line_length_limit", "2048", 80, UNL, 0,
	    "Longer lines are split into pieces of this size."),
	P_INT("header_address_token_limit", "10240", 1, UNL, 0,
	    "Most tokens in one address header."),
	P_BOOL("strict_rfc821_envelopes", "no",
	    "Require <> around MAIL FROM and RCPT TO addresses."),

	/* Processes (master and the daemon skeleton). */
	P_INT("default_process_limit", "100", 0, UNL, 0,
	    "Default maxproc of master.cf services."),
	P_TIMER("service_throttle_time", "60s", 's', 1, 0,
	    "How long master waits before restarting a service that fails at start-up."),
	P_TIMER("stop_drain_timeout", "5s", 's', 0, 0,
	    "petrel stop: how long deliveries and SMTP transactions in progress get to finish (qmgr records their results) before what is left is killed; 0 kills at once."),
	P_TIMER("max_idle", "100s", 's', 1, 0,
	    "How long a daemon waits for a client before exiting."),
	P_INT("max_use", "100", 0, UNL, 0,
	    "Clients a daemon serves before exiting (0: no limit)."),
	P_TIMER("daemon_timeout", "18000s", 's', 1, 0,
	    "Watchdog: a daemon stuck this long in one request is killed."),
	P_TIMER("ipc_timeout", "3600s", 's', 1, 0,
	    "Time limit for a read or write between Petrel processes."),
	P_TIMER("ipc_idle", "5s", 's', 1, 0,
	    "How long a client keeps an idle connection to a Petrel daemon."),
	P_TIMER("ipc_ttl", "1000s", 's', 1, 0,
	    "Longest a client keeps a connection to a Petrel daemon."),
	P_TIMER("trigger_timeout", "10s", 's', 1, 0,
	    "Time limit for sending a request that must arrive (a flush) to a trigger daemon, and for reading one from a stream client; wake-ups never wait."),
	P_CHOICE("accept_lock", "auto", "auto yes no",
	    "Serialise accept in pools of single-client daemons with a lock file: auto where the event loop cannot wake just one waiting process (no EPOLLEXCLUSIVE), yes always, no never."),
	P_STRF("debugger_command", "", PARAM_F_RAW,
	    "Command a daemon started with -D runs first ($process_name and $process_id expanded); it should start a debugger and wait."),
	P_TIME("in_flow_delay", "1s", 's', 0,
	    "Pause of a submitting process when mail arrives faster than it leaves (0: off)."),
	P_STR("debug_peer_list", "",
	    "Remote hosts whose sessions are logged verbosely."),
	P_INT("debug_peer_level", "2", 1, 10, 0,
	    "Verbosity added for debug_peer_list hosts."),
	P_BOOL("soft_bounce", "no",
	    "Turn would-be bounces into deferrals (for testing a configuration)."),

	/* Logging. */
	P_STR("maillog_file", "",
	    "Log to this file instead of syslog (master writes it for every daemon; petrel logrotate renames it)."),
	P_STR("maillog_file_compressor", "gzip",
	    "Program petrel logrotate runs on the renamed log file (its name as the one argument); empty: not compressed."),
	P_STR("maillog_file_rotate_suffix", "%Y%m%d-%H%M%S",
	    "strftime(3) format of the suffix petrel logrotate adds to the renamed log file."),
	P_INT("maillog_file_rotate_count", "7", 0, 100000, 0,
	    "Renamed log files petrel logrotate keeps (the newest ones); 0 keeps all."),
	P_STR("multi_instance_name", "",
	    "Name of this instance when several run on one host; the default syslog_name."),
	P_CHOICE("syslog_facility", "mail",
	    "mail daemon user local0 local1 local2 local3 local4 local5 local6 local7",
	    "Syslog facility of the log lines."),
	P_STR("syslog_name", "${multi_instance_name:petrel}$multi_instance_name",
	    "Prefix of the program names in log lines and syslog tags (petrel/qmgr): multi_instance_name when it is set."),
	P_INT("delay_logging_resolution_limit", "2", 0, 6, 0,
	    "At most this many digits after the decimal point in the delays "
	    "of delivery log lines (two significant digits are shown)."),

	/* Queue. */
	P_STR("chroot_files", "/etc/localtime, /etc/services, /etc/resolv.conf, "
	    "/etc/hosts, /etc/host.conf, /etc/nsswitch.conf, /etc/gai.conf, "
	    "/etc/passwd, /etc/group",
	    "System files copied into queue_directory for chrooted daemons by petrel check, petrel start and petrel reload: /path, or /source=/path."),
	P_STR("hash_queue_names", "deferred, defer",
	    "Queues split into hashed subdirectories."),
	P_INT("hash_queue_depth", "1", 1, 4, 0,
	    "Levels of hashed subdirectories."),
	P_TIMER("temp_file_max_age", "1h", 'h', 1, 0,
	    "Unlocked temporary queue files (tmp.*) not changed for this long are removed by petrel start and by qmgr, which looks that often."),
	P_SIZE("queue_minfree", "0",
	    "Free space the queue file system must keep; below it mail is refused (0: no check)."),
	P_STR("authorized_mailq_users", "static:anyone",
	    "Who may list the queue."),
	P_STR("authorized_flush_users", "static:anyone",
	    "Who may flush the queue."),
	P_STR("authorized_submit_users", "static:anyone",
	    "Who may submit mail with sendmail."),
	P_STR("alternate_config_directories", "",
	    "Configuration directories besides the default that the set-gid postdrop accepts (-c, MAIL_CONFIG)."),

	/* Queue manager: active queue and retries. */
	P_INT("qmgr_message_active_limit", "20000", 1, UNL, 0,
	    "Most messages in the active queue."),
	P_INT("qmgr_message_recipient_limit", "20000", 1, UNL, 0,
	    "Most recipients held in memory over all active messages."),
	P_INT("qmgr_message_recipient_minimum", "10", 1, UNL, 0,
	    "Recipients read per message even when the recipient limit is reached."),
	P_TIMER("qmgr_clog_warn_time", "300s", 's', 0, 0,
	    "Minimal interval between warnings that the active queue is congested (0: never)."),
	P_TIMER("qmgr_daemon_timeout", "1000s", 's', 1, 0,
	    "Watchdog of the queue manager."),
	P_TIMER("qmgr_ipc_timeout", "60s", 's', 1, 0,
	    "Time limit for the queue manager's requests to other daemons."),
	P_TIMER("queue_run_delay", "300s", 's', 1, 0,
	    "Interval between scans of the deferred queue."),
	P_TIMER("minimal_backoff_time", "300s", 's', 1, 0,
	    "Shortest retry interval of deferred mail and of dead destinations."),
	P_TIMER("maximal_backoff_time", "4000s", 's', 1, 0,
	    "Longest retry interval of deferred mail and of dead destinations."),
	P_TIME("maximal_queue_lifetime", "5d", 'd', 0,
	    "Age at which undeliverable mail is returned to the sender (0: after one attempt)."),
	P_TIME("bounce_queue_lifetime", "5d", 'd', 0,
	    "maximal_queue_lifetime for mail from the null sender (bounces)."),
	P_TIME("delay_warning_time", "0h", 'h', 0,
	    "Age at which the sender is told that mail is delayed (0: never)."),
	P_CHOICE("backoff_function", "postfix",
	    "postfix linear arithmetic geometric exponential",
	    "How retry intervals grow: postfix (message age), linear, arithmetic, geometric or exponential."),
	P_INT("backoff_retry_count", "10", 2, UNL, 0,
	    "NUM of the back-off functions: attempts until maximal_backoff_time is reached."),
	P_INT("backoff_jitter", "0", 0, 100, 0,
	    "Random spread of retry times, in percent."),
	P_TIMER("transport_retry_time", "60s", 's', 1, 0,
	    "How long a transport with failing delivery agents is suspended."),
	P_INT("destination_status_cache_limit", "10000", 1, UNL, 0,
	    "Most dead destinations remembered in the destination status cache."),

	/* Queue manager: per-destination concurrency and scheduling, with
	 * TRANSPORT_X overrides. */
	P_INT("initial_destination_concurrency", "5", 1, UNL, TR,
	    "Concurrency a destination starts with."),
	P_INT("default_destination_concurrency_limit", "20", 0, UNL, TR,
	    "Most parallel deliveries to one destination (0: no limit)."),
	P_INT("local_destination_concurrency_limit", "2", 0, UNL, 0,
	    "Most parallel deliveries to one local recipient."),
	P_INT("default_destination_recipient_limit", "50", 0, UNL, TR,
	    "Most recipients per delivery (0: no limit)."),
	P_INT("local_destination_recipient_limit", "1", 0, UNL, 0,
	    "Most recipients per local delivery."),
	P_CHECK("default_destination_concurrency_positive_feedback", "1", check_feedback, TR,
	    "Window growth per successful delivery: 1/concurrency, 1/sqrt_concurrency or a number in [0,1]."),
	P_CHECK("default_destination_concurrency_negative_feedback", "1", check_feedback, TR,
	    "Window shrink per failed connection: 1/concurrency, 1/sqrt_concurrency or a number in [0,1]."),
	{ .name = "default_destination_concurrency_feedback_mode",
	  .type = PARAM_STR, .defval = "postfix", .choices = "postfix learn",
	  .flags = TR,
	  .desc = "Concurrency feedback: postfix (Postfix 2.5 rules) or learn (also remember where a destination starts refusing sessions and stay below it)." },
	P_INT("default_destination_concurrency_failed_cohort_limit", "1", 0, UNL, TR,
	    "Failed pseudo-cohorts after which a destination is declared dead."),
	{ .name = "default_destination_grouping", .type = PARAM_STR,
	  .defval = "domain", .choices = "domain mx", .flags = TR,
	  .desc = "What keys a transport's destination queues, windows, dead state and DSC entries: the nexthop domain, or the set of its MX hosts (domains of one provider share them)." },
	P_TIME("default_destination_rate_delay", "0s", 's', TR,
	    "Pause between deliveries to one destination (0: none; else concurrency 1)."),
	P_CHECK("default_destination_message_rate", "0", check_rate, TR,
	    "Most deliveries to one destination: a token bucket's rate N/s, N/m, N/h or N/d (0: no limit)."),
	P_INT("default_destination_message_burst", "1", 1, UNL, TR,
	    "Size of the message rate's bucket: deliveries one destination may get at once."),
	P_CHECK("default_destination_connection_rate", "0", check_rate, TR,
	    "Most new connections to one destination, N/s, N/m, N/h or N/d; every delivery counts as one (0: no limit)."),
	P_INT("default_destination_connection_burst", "1", 1, UNL, TR,
	    "Size of the connection rate's bucket."),
	P_INT("default_destination_messages_per_connection", "0", 0, UNL, TR,
	    "Deliveries after which a cached connection to one destination is not reused (0: no limit)."),
	P_STRF("default_destination_rate_maps", "", TR,
	    "Lookup tables of per-destination limits (\"messages=500/h burst=20 connections=10/m messages_per_connection=50\")."),
	P_BOOL("destination_concurrency_feedback_debug", "no",
	    "Log every change of a destination's concurrency window."),
	P_INT("default_delivery_slot_cost", "5", 0, UNL, TR,
	    "Deliveries a message must make to earn one slot for preemption (below 2: no preemption)."),
	P_INT("default_delivery_slot_loan", "3", 0, UNL, TR,
	    "Slots lent to a preempting message."),
	P_INT("default_delivery_slot_discount", "50", 0, 100, TR,
	    "Percent of the needed slots a preempting message may lack."),
	P_INT("default_minimum_delivery_slots", "3", 0, UNL, TR,
	    "Slots a message must be able to earn before it can be preempted."),
	P_INT("default_recipient_limit", "20000", 1, UNL, TR,
	    "Most in-memory recipients of one transport."),
	P_INT("default_extra_recipient_limit", "1000", 0, UNL, TR,
	    "In-memory recipients of a transport kept for preempting messages."),
	P_INT("default_recipient_refill_limit", "100", 1, UNL, TR,
	    "Recipients read at a time for a partly read message."),
	P_TIMER("default_recipient_refill_delay", "5s", 's', 1, TR,
	    "Longest wait before reading more recipients of a partly read message."),
	P_TIME("default_time_limit", "$command_time_limit", 's', TR,
	    "Time limit of one delivery by a delivery agent."),

	/* Notices (bounce). */
	P_STR("notify_classes", "resource, software",
	    "Problems reported to the postmaster (bounce, 2bounce, delay, resource, software, protocol, policy)."),
	P_STR("bounce_notice_recipient", "postmaster",
	    "Recipient of postmaster copies of bounces."),
	P_STR("2bounce_notice_recipient", "postmaster",
	    "Recipient of undeliverable bounces (double bounces)."),
	P_STR("delay_notice_recipient", "postmaster",
	    "Recipient of postmaster copies of delay warnings."),
	P_STR("error_notice_recipient", "postmaster",
	    "Recipient of notices about resource, software and protocol problems."),
	P_STR("double_bounce_sender", "double-bounce",
	    "Sender address of bounces of bounces; mail to it is dropped."),
	P_SIZE("bounce_size_limit", "50000",
	    "Most of the original message returned in a notice."),

	/* SMTP server. */
	P_STR("smtpd_banner", "$myhostname ESMTP $mail_name",
	    "Text after 220 in the greeting."),
	P_TIMER("smtpd_timeout", "300s", 's', 1, 0,
	    "Time limit for the client to send a command or data."),
	P_TIMER("smtpd_starttls_timeout", "300s", 's', 1, 0,
	    "Time limit of the server's TLS handshake."),
	P_INT("smtpd_hard_error_limit", "20", 1, UNL, 0,
	    "Errors after which the server disconnects."),
	P_INT("smtpd_soft_error_limit", "10", 0, UNL, 0,
	    "Errors after which each reply is delayed by smtpd_error_sleep_time."),
	P_TIME("smtpd_error_sleep_time", "1s", 's', 0,
	    "Delay of replies once the soft error limit is reached."),
	P_INT("smtpd_junk_command_limit", "100", 1, UNL, 0,
	    "NOOP, RSET, VRFY and ETRN commands counted as errors beyond this."),
	P_INT("smtpd_recipient_limit", "1000", 1, UNL, 0,
	    "Most recipients of one message."),
	P_INT("smtpd_recipient_overshoot_limit", "1000", 1, UNL, 0,
	    "Recipients over the limit counted as errors."),
	P_INT("smtpd_client_connection_count_limit", "50", 0, UNL, 0,
	    "Most simultaneous connections from one client address (0: no limit)."),
	P_STR("smtpd_client_event_limit_exceptions", "${smtpd_client_connection_limit_exceptions:$mynetworks}",
	    "Clients exempt from the client connection count and rate limits (a network list like mynetworks)."),
	P_STR("smtpd_client_connection_limit_exceptions", "",
	    "Old name of smtpd_client_event_limit_exceptions: set that one instead (its default, as in Postfix, is $mynetworks only while this one is empty)."),
	P_STR("smtpd_forbidden_commands", "CONNECT GET POST",
	    "Commands (HTTP and proxy words) after which smtpd logs a non-SMTP client and hangs up."),
	P_INT("non_fqdn_reject_code", "504", 400, 599, 0,
	    "SMTP reply code of the reject_non_fqdn_* restrictions."),
	P_STR("cleanup_service_name", "cleanup",
	    "The master.cf name of the cleanup service smtpd hands mail to."),
	P_INT("smtpd_client_connection_rate_limit", "0", 0, UNL, 0,
	    "Most connections from one client per anvil_rate_time_unit (0: no limit)."),
	P_INT("smtpd_client_message_rate_limit", "0", 0, UNL, 0,
	    "Most MAIL FROM commands from one client per anvil_rate_time_unit (0: no limit)."),
	P_INT("smtpd_client_recipient_rate_limit", "0", 0, UNL, 0,
	    "Most RCPT TO commands from one client per anvil_rate_time_unit (0: no limit)."),
	P_INT("smtpd_client_new_tls_session_rate_limit", "0", 0, UNL, 0,
	    "Most new TLS sessions (STARTTLS handshakes) from one client per anvil_rate_time_unit (0: no limit)."),
	P_INT("smtpd_client_auth_rate_limit", "0", 0, UNL, 0,
	    "Most AUTH commands from one client per anvil_rate_time_unit (0: no limit)."),
	P_TIMER("anvil_rate_time_unit", "60s", 's', 1, 0,
	    "Time unit of the client rate limits; anvil forgets a client idle for this long."),
	P_TIMER("anvil_status_update_time", "600s", 's', 1, 0,
	    "How often anvil logs the peak connection counts and rates."),
	P_INT("anvil_client_limit", "100000", 1, UNL, 0,
	    "Most clients anvil keeps counts for; beyond it the idle ones unused longest are forgotten."),
	P_STR("smtpd_client_restrictions", "",
	    "Access restrictions applied when a client connects."),
	P_STR("smtpd_helo_restrictions", "",
	    "Access restrictions applied to HELO/EHLO."),
	P_STR("smtpd_sender_restrictions", "",
	    "Access restrictions applied to MAIL FROM."),
	P_STR("smtpd_relay_restrictions", "permit_mynetworks, reject_unauth_destination",
	    "Relay control restrictions applied to RCPT TO, before smtpd_recipient_restrictions."),
	P_STR("smtpd_recipient_restrictions", "",
	    "Access restrictions applied to RCPT TO."),
	P_STR("smtpd_data_restrictions", "",
	    "Access restrictions applied to DATA."),
	P_STR("smtpd_end_of_data_restrictions", "",
	    "Access restrictions applied at the end of the message."),
	P_BOOL("smtpd_helo_required", "no",
	    "Require HELO or EHLO before MAIL."),
	P_BOOL("smtpd_delay_reject", "yes",
	    "Apply client, HELO and sender restrictions at RCPT TO."),
	P_BOOL("disable_vrfy_command", "yes",
	    "Answer VRFY with a non-committal 252; with no, VRFY checks the address (252 or a reject)."),
	P_BOOL("smtpd_reject_unlisted_recipient", "yes",
	    "Reject recipients unknown in local_recipient_maps at RCPT TO."),
	P_BOOL("smtpd_reject_unlisted_sender", "no",
	    "Reject senders this host would reject as recipients."),
	P_BOOL("smtpd_peername_lookup", "yes",
	    "Look up the client's host name in DNS."),
	P_BOOL("smtputf8_enable", "yes",
	    "Offer and accept SMTPUTF8."),
	P_CHOICE("smtpd_forbid_bare_newline", "normalize", "no normalize yes",
	    "Bare LF in SMTP input: accept (no), treat as CRLF (normalize) or reject (yes)."),
	P_STR("smtpd_discard_ehlo_keywords", "",
	    "EHLO keywords not to offer (e.g. pipelining, dsn)."),
	P_BOOL("smtpd_client_port_logging", "no",
	    "Log the client's port number."),
	P_INT("relay_domains_reject_code", "554", 400, 599, 0,
	    "SMTP reply code for a refused relay attempt."),
	P_INT("access_map_reject_code", "554", 400, 599, 0,
	    "SMTP reply code for a REJECT from an access table."),
	P_CHECK("unknown_address_reject_code", "450", check_reply_code, 0,
	    "SMTP reply code for a recipient or sender domain that does not resolve."),
	P_CHOICE("smtpd_tls_security_level", "none", "none may encrypt",
	    "STARTTLS in the server: none, may (offer) or encrypt (require)."),
	P_STR("smtpd_tls_cert_file", "",
	    "Server certificate (PEM), with its chain."),
	P_STR("smtpd_tls_key_file", "$smtpd_tls_cert_file",
	    "Private key of the server certificate (PEM)."),
	P_STR("smtpd_tls_CAfile", "",
	    "Trusted CA certificates for client certificates (PEM file)."),
	P_STR("smtpd_tls_CApath", "",
	    "Directory of trusted CA certificates for client certificates."),
	P_STR("smtpd_tls_protocols", ">=TLSv1.2",
	    "TLS versions the server accepts."),
	P_INT("smtpd_tls_loglevel", "0", 0, 4, 0,
	    "Detail of the server's TLS logging."),
	P_BOOL("smtpd_tls_received_header", "no",
	    "Put the TLS protocol and cipher in the Received: header."),
	P_BOOL("smtpd_tls_wrappermode", "no",
	    "Implicit TLS: the TLS handshake starts with the connection, before the greeting (the submissions service, port 465)."),
	P_BOOL("smtpd_tls_auth_only", "yes",
	    "Offer and accept SMTP AUTH only in a TLS session (Postfix's default is no)."),

	/* SMTP AUTH in the server. */
	P_BOOL("smtpd_sasl_auth_enable", "no",
	    "Offer and accept SMTP AUTH (RFC 4954)."),
	P_CHOICE("smtpd_sasl_type", "dovecot", "dovecot",
	    "The authentication backend: dovecot (Dovecot's authentication protocol on a UNIX socket)."),
	P_STR("smtpd_sasl_path", "private/auth",
	    "Dovecot's authentication socket: relative to queue_directory, or an absolute path."),
	P_STR("smtpd_sasl_service", "smtp",
	    "Service name passed to the authentication backend."),
	P_CHECK("smtpd_sasl_security_options", "noanonymous", check_sasl_options, 0,
	    "Mechanisms not offered without TLS: noanonymous, noplaintext, noactive, nodictionary; or mechanisms required to have forward_secrecy, mutual_auth."),
	P_CHECK("smtpd_sasl_tls_security_options", "$smtpd_sasl_security_options",
	    check_sasl_options, 0,
	    "Like smtpd_sasl_security_options, in a TLS session."),
	P_BOOL("smtpd_sasl_authenticated_header", "no",
	    "Put the authenticated user name in the Received: header."),
	P_STR("smtpd_sasl_local_domain", "",
	    "The local SASL realm (Cyrus); not used with Dovecot, whose auth_default_realm does this."),
	P_BOOL("broken_sasl_auth_clients", "no",
	    "Also offer AUTH in the obsolete AUTH=mechanisms form, for old Microsoft clients."),
	P_INT("smtpd_sasl_response_limit", "12288", 1, 1048576, 0,
	    "Longest client response line during SMTP AUTH, in bytes."),
	P_TIMER("smtpd_sasl_timeout", "30s", 's', 1, 0,
	    "Time limit for each step of an exchange with the authentication server; then 454 (Petrel only: Postfix waits 10 s, less than the 15 s Dovecot may hold a reply after failed logins)."),
	P_STR("smtpd_sender_login_maps", "",
	    "Tables from a MAIL FROM address to the SASL login names that own it (reject_sender_login_mismatch)."),

	/* SMTP client. */
	P_TIMER("smtp_connect_timeout", "30s", 's', 1, 0,
	    "Time limit for a TCP connection to a server."),
	P_TIMER("smtp_helo_timeout", "300s", 's', 1, 0,
	    "Time limit for the greeting and the reply to HELO/EHLO."),
	P_TIMER("smtp_mail_timeout", "300s", 's', 1, 0,
	    "Time limit for the reply to MAIL FROM."),
	P_TIMER("smtp_rcpt_timeout", "300s", 's', 1, 0,
	    "Time limit for the reply to RCPT TO."),
	P_TIMER("smtp_data_init_timeout", "120s", 's', 1, 0,
	    "Time limit for the reply to DATA."),
	P_TIMER("smtp_data_xfer_timeout", "180s", 's', 1, 0,
	    "Time limit for sending a piece of the message content."),
	P_TIMER("smtp_data_done_timeout", "600s", 's', 1, 0,
	    "Time limit for the reply to the final dot."),
	P_TIMER("smtp_quit_timeout", "300s", 's', 1, 0,
	    "Time limit for the reply to QUIT."),
	P_TIMER("smtp_rset_timeout", "20s", 's', 1, 0,
	    "Time limit for the reply to RSET on a reused connection."),
	P_TIMER("smtp_starttls_timeout", "300s", 's', 1, 0,
	    "Time limit of the client's TLS handshake."),
	P_CHECK("smtp_host_lookup", "dns", check_host_lookup, 0,
	    "How server addresses are found: dns, native (getaddrinfo) or both."),
	P_STR("dns_server_address", "", "Test only: send every DNS query to this loopback IPv4 ADDR[:PORT] instead of the resolv.conf name servers; empty: the system resolver."),
	P_INT("smtp_mx_address_limit", "5", 0, UNL, 0,
	    "Most server addresses tried per delivery (0: no limit)."),
	P_INT("smtp_mx_session_limit", "2", 0, UNL, 0,
	    "Most SMTP sessions per delivery (0: no limit)."),
	P_CHOICE("smtp_address_preference", "any", "any ipv4 ipv6",
	    "Address family tried first among equal MX preferences."),
	P_BOOL("smtp_defer_if_no_mx_address_found", "no",
	    "Defer (4.4.4) instead of bouncing (5.4.4) when no MX host of a domain has an address."),
	P_BOOL("smtp_skip_5xx_greeting", "yes",
	    "Try the next server after a 5xx greeting."),
	P_BOOL("smtp_always_send_ehlo", "yes",
	    "Send EHLO even when the greeting does not say ESMTP."),
	P_STR("smtp_helo_name", "$myhostname",
	    "Host name sent in HELO/EHLO."),
	P_STR("smtp_bind_address", "",
	    "Local IPv4 address of outgoing connections."),
	P_STR("smtp_bind_address6", "",
	    "Local IPv6 address of outgoing connections."),
	P_INT("smtp_line_length_limit", "998", 0, UNL, 0,
	    "Longer message lines are folded when sent (0: never)."),
	P_TIMER("smtp_connection_cache_time_limit", "2s", 's', 1, 0,
	    "How long an idle connection is kept for reuse."),
	P_TIMER("smtp_connection_reuse_time_limit", "300s", 's', 1, 0,
	    "Age after which a connection is no longer reused."),
	P_INT("smtp_connection_reuse_count_limit", "0", 0, UNL, 0,
	    "Deliveries after which a connection is no longer reused (0: no limit)."),
	P_BOOL("smtp_connection_cache_on_demand", "yes",
	    "Keep connections to destinations with a backlog for reuse."),
	P_STR("scache_service_name", "scache",
	    "The master.cf service of the connection cache (private/NAME) that smtp processes share idle sessions through; empty: sessions are not shared."),
	P_TIMER("connection_cache_protocol_timeout", "2s", 's', 1, 0,
	    "Time limit for a request to the connection cache and its reply; a request begun and not finished within it closes the client."),
	P_TIMER("connection_cache_ttl_limit", "2s", 's', 1, 0,
	    "Longest time the connection cache keeps an idle session, whatever a client asks."),
	P_TIMER("connection_cache_status_update_time", "600s", 's', 1, 0,
	    "How often the connection cache logs its statistics."),
	P_INT("connection_cache_destination_limit", "$default_destination_concurrency_limit", 1, UNL, 0,
	    "Most sessions the connection cache keeps for one destination (the oldest go)."),
	P_INT("connection_cache_session_limit", "1000", 1, UNL, 0,
	    "Most sessions the connection cache keeps in all (the oldest go)."),
	/* LMTP client (the lmtp agent: the smtp engine speaking RFC 2033). */
	P_TIMER("lmtp_connect_timeout", "0s", 's', 0, 0,
	    "Time limit for a connection to an LMTP server (0: the system's own)."),
	P_TIMER("lmtp_lhlo_timeout", "300s", 's', 1, 0,
	    "Time limit for the LMTP greeting and the reply to LHLO."),
	P_TIMER("lmtp_mail_timeout", "300s", 's', 1, 0,
	    "Time limit for the LMTP server's reply to MAIL FROM."),
	P_TIMER("lmtp_rcpt_timeout", "300s", 's', 1, 0,
	    "Time limit for the LMTP server's reply to RCPT TO."),
	P_TIMER("lmtp_data_init_timeout", "120s", 's', 1, 0,
	    "Time limit for the LMTP server's reply to DATA."),
	P_TIMER("lmtp_data_xfer_timeout", "180s", 's', 1, 0,
	    "Time limit for sending a piece of the message content over LMTP."),
	P_TIMER("lmtp_data_done_timeout", "600s", 's', 1, 0,
	    "Time limit for each per-recipient reply after the final dot over LMTP."),
	P_TIMER("lmtp_rset_timeout", "20s", 's', 1, 0,
	    "Time limit for the reply to RSET on a reused LMTP connection."),
	P_TIMER("lmtp_quit_timeout", "300s", 's', 1, 0,
	    "Time limit for the LMTP server's reply to QUIT."),
	P_STR("lmtp_lhlo_name", "$myhostname",
	    "Host name sent in LHLO."),
	P_INT("lmtp_line_length_limit", "998", 0, UNL, 0,
	    "Longer message lines are folded when sent over LMTP (0: never)."),
	P_BOOL("lmtp_connection_cache_on_demand", "yes",
	    "Keep LMTP connections to destinations with a backlog for reuse."),
	P_TIMER("lmtp_connection_cache_time_limit", "2s", 's', 1, 0,
	    "How long an idle LMTP connection is kept for reuse."),
	P_TIMER("lmtp_connection_reuse_time_limit", "300s", 's', 1, 0,
	    "Age after which an LMTP connection is no longer reused."),
	P_TIMER("lmtp_starttls_timeout", "300s", 's', 1, 0,
	    "Time limit of the LMTP client's TLS handshake."),
	P_CHOICE("lmtp_tls_security_level", "none", "none may encrypt verify secure",
	    "STARTTLS in the LMTP client: none (the default), may, encrypt, verify or secure."),
	P_STR("lmtp_tls_CAfile", "",
	    "Trusted CA certificates for LMTP server certificates (PEM file)."),
	P_STR("lmtp_tls_CApath", "",
	    "Directory of trusted CA certificates for LMTP server certificates."),
	P_STR("lmtp_tls_cert_file", "",
	    "LMTP client certificate (PEM), if the servers want one."),
	P_STR("lmtp_tls_key_file", "$lmtp_tls_cert_file",
	    "Private key of the LMTP client certificate."),
	P_STR("lmtp_tls_protocols", ">=TLSv1.2",
	    "TLS versions the LMTP client uses."),
	P_INT("lmtp_tls_loglevel", "0", 0, 4, 0,
	    "Detail of the LMTP client's TLS logging."),
	P_BOOL("lmtp_sasl_auth_enable", "no",
	    "AUTH in the LMTP client: log in to servers that offer AUTH with the credentials of lmtp_sasl_password_maps."),
	P_STR("lmtp_sasl_password_maps", "",
	    "Lookup tables of LMTP client credentials, user:password, by sender (with lmtp_sender_dependent_authentication), @domain, next hop (as smtp_sasl_password_maps; a UNIX socket next hop is looked up as unix:PATH, then PATH)."),
	P_CHECK("lmtp_sasl_security_options", "noplaintext, noanonymous", check_smtp_sasl_options, 0,
	    "SASL mechanism properties the LMTP client refuses on a connection without TLS (words as smtp_sasl_security_options)."),
	P_CHECK("lmtp_sasl_tls_security_options", "$lmtp_sasl_security_options", check_smtp_sasl_options, 0,
	    "SASL mechanism properties the LMTP client refuses on a TLS connection."),
	P_STR("lmtp_sasl_mechanism_filter", "",
	    "If not empty, only the LMTP server's SASL mechanisms on this list are used (names, !name to exclude)."),
	P_BOOL("lmtp_sender_dependent_authentication", "no",
	    "Look the sender address (then @domain) up in lmtp_sasl_password_maps before the next hop."),
	P_BOOL("lmtp_sasl_auth_soft_bounce", "yes",
	    "Defer, not bounce, when an LMTP server refuses the login with 5xx."),
	P_CHOICE("smtp_tls_security_level", "may", "none may encrypt verify secure",
	    "STARTTLS in the client: none, may, encrypt, verify or secure."),
	P_STR("smtp_tls_CAfile", "",
	    "Trusted CA certificates for server certificates (PEM file)."),
	P_STR("smtp_tls_CApath", "",
	    "Directory of trusted CA certificates for server certificates."),
	P_STR("smtp_tls_cert_file", "",
	    "Client certificate (PEM), if the servers want one."),
	P_STR("smtp_tls_key_file", "$smtp_tls_cert_file",
	    "Private key of the client certificate."),
	P_STR("smtp_tls_protocols", ">=TLSv1.2",
	    "TLS versions the client uses."),
	P_INT("smtp_tls_loglevel", "0", 0, 4, 0,
	    "Detail of the client's TLS logging."),
	P_BOOL("smtp_sasl_auth_enable", "no",
	    "SMTP AUTH in the client: log in to servers that offer AUTH with the credentials of smtp_sasl_password_maps."),
	P_STR("smtp_sasl_password_maps", "",
	    "Lookup tables of client credentials, user:password, by sender (with smtp_sender_dependent_authentication), @domain, next hop ([host]:port, [host], host or domain)."),
	P_CHECK("smtp_sasl_security_options", "noplaintext, noanonymous", check_smtp_sasl_options, 0,
	    "SASL mechanism properties the client refuses on a connection without TLS: noplaintext, noanonymous, noactive, nodictionary, mutual_auth, forward_secrecy."),
	P_CHECK("smtp_sasl_tls_security_options", "$smtp_sasl_security_options", check_smtp_sasl_options, 0,
	    "SASL mechanism properties the client refuses on a TLS connection (same words as smtp_sasl_security_options)."),
	P_STR("smtp_sasl_mechanism_filter", "",
	    "If not empty, only the server's SASL mechanisms on this list are used (names, !name to exclude)."),
	P_BOOL("smtp_sender_dependent_authentication", "no",
	    "Look the sender address (then @domain) up in smtp_sasl_password_maps before the next hop; sessions are reused only with the same credentials."),
	P_BOOL("smtp_sasl_auth_soft_bounce", "yes",
	    "Defer, not bounce, when a server refuses the login with 5xx."),
};

const param_def_t *param_table(size_t *count)
{
	*count = sizeof(table) / sizeof(table[0]);
	return table;
}

const char *param_type_name(enum param_type type)
{
	switch (type) {
	case PARAM_STR:
		return "string";
	case PARAM_INT:
		return "integer";
	case PARAM_BOOL:
		return "boolean";
	case PARAM_TIME:
		return "time";
	case PARAM_SIZE:
		return "size";
	}
	return "?";
}

/* Name index and the list of per-transport suffixes, built on first use. */
static htable_t *index_by_name;
static htable_t *index_by_suffix;

static void build_index(void)
{
	if (index_by_name)
		return;
	index_by_name = htable_new(512, 0);
	index_by_suffix = htable_new(64, 0);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const param_def_t *d = &table[i];
		if (htable_add(index_by_name, d->name, (void *)d) == NULL)
			log_panic("parameter table: duplicate entry %s", d->name);
		if (d->flags & PARAM_F_TRANSPORT)
			htable_add(index_by_suffix, param_transport_suffix(d), (void *)d);
	}
}

const param_def_t *param_find(const char *name)
{
	build_index();
	return htable_get(index_by_name, name);
}

const char *param_transport_suffix(const param_def_t *def)
{
	if (strncmp(def->name, "default_", 8) == 0)
		return def->name + 8;
	return def->name;
}

const param_def_t *param_transport_default(const char *suffix)
{
	build_index();
	return htable_get(index_by_suffix, suffix);
}

const param_def_t *param_lookup(const char *name)
{
	const param_def_t *d = param_find(name);
	if (d)
		return d;
	d = param_transport_default(name);
	return d;
}

const param_def_t *param_split_transport(const char *name, size_t *service_len)
{
	build_index();
	/* Try every '_' as the separator, leftmost first, so that the
	 * longest suffix wins. */
	for (const char *p = name; (p = strchr(p, '_')) != NULL; p++) {
		if (p == name)
			continue;
		const param_def_t *d = htable_get(index_by_suffix, p + 1);
		if (d) {
			if (service_len)
				*service_len = (size_t)(p - name);
			return d;
		}
	}
	return NULL;
}

const char *param_default(const param_def_t *def)
{
	if (def->flags & PARAM_F_COMPUTED)
		return def->compute();
	return def->defval;
}

bool param_name_ok(const char *name)
{
	if (!isalnum((unsigned char)*name))
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
			return false;
	return true;
}

bool param_parse_int(const char *value, long *out)
{
	return str_to_long(value, out);
}

bool param_parse_size(const char *value, long *out)
{
	unsigned long v;
	if (!str_to_ulong(value, &v) || v > (unsigned long)LONG_MAX)
		return false;
	*out = (long)v;
	return true;
}

bool param_parse_time(const char *value, char unit, long *out)
{
	unsigned long v;
	long mult;
	size_t n = strlen(value);
	char u = unit;
	char digits[32];

	if (n == 0 || n >= sizeof(digits))
		return false;
	if (isalpha((unsigned char)value[n - 1])) {
		u = (char)tolower((unsigned char)value[n - 1]);
		n--;
	}
	memcpy(digits, value, n);
	digits[n] = 0;
	if (!str_to_ulong(digits, &v))
		return false;
	if ((mult = str_time_unit(u)) == 0)
		return false;
	if (v > (unsigned long)(LONG_MAX / mult))
		return false;
	*out = (long)v * mult;
	return true;
}

bool param_parse_bool(const char *value, bool *out)
{
	if (strcasecmp(value, "yes") == 0 || strcasecmp(value, "true") == 0) {
		*out = true;
		return true;
	}
	if (strcasecmp(value, "no") == 0 || strcasecmp(value, "false") == 0) {
		*out = false;
		return true;
	}
	return false;
}

/* "a b c" -> "a, b, c" for messages. */
static void list_choices(str_t *out, const char *choices)
{
	char *copy = xstrdup(choices), *cp = copy, *t;
	int n = 0;
	while ((t = str_token(&cp, " ")) != NULL)
		str_catf(out, "%s%s", n++ ? ", " : "", t);
	free(copy);
}

static bool in_choices(const char *value, const char *choices)
{
	size_t len = strlen(value);
	for (const char *p = choices; *p;) {
		size_t w = strcspn(p, " ");
		/* exact case: programs compare the value with strcmp */
		if (w == len && strncmp(p, value, len) == 0)
			return true;
		p += w;
		while (*p == ' ')
			p++;
	}
	return false;
}

bool param_check_value(const param_def_t *def, const char *name,
    const char *value, str_t *why)
{
	long v = 0;
	bool b;
	const char *what = NULL;

	switch (def->type) {
	case PARAM_STR:
		if (def->choices && !in_choices(value, def->choices)) {
			str_setf(why, "bad value '%s' for parameter %s (one of: ", value, name);
			list_choices(why, def->choices);
			str_cat(why, ")");
			return false;
		}
		if (def->check) {
			str_t sub = STR_INIT;
			if (!def->check(value, &sub)) {
				str_setf(why, "bad value '%s' for parameter %s (%s)",
				    value, name, str_cstr(&sub));
				str_release(&sub);
				return false;
			}
			str_release(&sub);
		}
		return true;
	case PARAM_BOOL:
		if (param_parse_bool(value, &b))
			return true;
		str_setf(why, "bad boolean value '%s' for parameter %s (yes or no)", value, name);
		return false;
	case PARAM_INT:
		if (!param_parse_int(value, &v))
			what = "integer";
		break;
	case PARAM_SIZE:
		if (!param_parse_size(value, &v))
			what = "size";
		break;
	case PARAM_TIME:
		if (!param_parse_time(value, def->unit, &v))
			what = "time";
		break;
	}
	if (what) {
		str_setf(why, "bad %s value '%s' for parameter %s", what, value, name);
		if (def->type == PARAM_TIME)
			str_cat(why, " (a number with an optional unit s, m, h, d or w)");
		return false;
	}
	if (v < def->min || v > def->max) {
		str_setf(why, "%s value '%s' out of range for parameter %s (",
		    param_type_name(def->type), value, name);
		if (def->max == UNL)
			str_catf(why, "at least %ld", def->min);
		else
			str_catf(why, "%ld..%ld", def->min, def->max);
		str_cat(why, def->type == PARAM_TIME ? " seconds)" : ")");
		return false;
	}
	return true;
}

/* Feedback: 1/concurrency, 1/sqrt_concurrency, or a number in [0, 1]. */
static bool check_feedback(const char *value, str_t *why)
{
	if (strcmp(value, "1/concurrency") == 0 ||
	    strcmp(value, "1/sqrt_concurrency") == 0)
		return true;
	char *end;
	errno = 0;
	double x = strtod(value, &end);
	if (end != value && *end == 0 && errno == 0 && isfinite(x) &&
	    x >= 0 && x <= 1 && (isdigit((unsigned char)*value) || *value == '.'))
		return true;
	str_set(why, "1/concurrency, 1/sqrt_concurrency or a number from 0 to 1");
	return false;
}

static bool check_rate(const char *value, str_t *why)
{
	double r;

	if (tb_rate_parse(value, &r, why))
		return true;
	str_set(why, "N/s, N/m, N/h or N/d with N > 0 (e.g. 500/h), or 0 for no limit");
	return false;
}

/* A list (commas or blanks) of words, each in choices. */
static bool check_word_list(const char *value, const char *choices,
    const char *explain, str_t *why)
{
	char *copy = xstrdup(value), *cp = copy, *t;
	int n = 0;
	bool ok = true;
	while ((t = str_token(&cp, ", \t")) != NULL) {
		n++;
		if (!in_choices(t, choices))
			ok = false;
	}
	free(copy);
	if (ok && n > 0)
		return true;
	str_set(why, explain);
	return false;
}

static bool check_protocols(const char *value, str_t *why)
{
	return check_word_list(value, "all ipv4 ipv6", "all, ipv4, ipv6 or ipv4, ipv6", why);
}

static bool check_host_lookup(const char *value, str_t *why)
{
	return check_word_list(value, "dns native", "dns, native or dns, native", why);
}

static bool check_reply_code(const char *value, str_t *why)
{
	long v;
	if (str_to_long(value, &v) && v >= 400 && v <= 599)
		return true;
	str_set(why, "an SMTP reply code from 400 to 599");
	return false;
}

/* smtpd_milters, non_smtpd_milters: addresses and per-milter settings
 * (milter.h). */
static bool check_milters(const char *value, str_t *why)
{
	return milter_list_check(value, why);
}

static bool check_milter_action(const char *value, str_t *why)
{
	enum milter_defact d;

	if (milter_defact_parse(value, &d))
		return true;
	str_set(why, "tempfail, accept, reject or quarantine");
	return false;
}

/* smtpd_sasl_security_options: Postfix's words, blank or comma
 * separated (sasl_opts.h). */
static bool check_sasl_options(const char *value, str_t *why)
{
	unsigned mask;
	size_t n;
	const char *bad = sasl_opts_scan(value, &mask, &n);

	if (bad == NULL)
		return true;
	str_setf(why, "noanonymous, noplaintext, noactive, nodictionary, "
	    "forward_secrecy or mutual_auth, not \"%.*s\"",
	    (int)(n > 64 ? 64 : n), bad);
	return false;
}

/* The first dotted name on an /etc/hosts line that lists short.  Only the
 * hosts file is read: deriving a default must never send a DNS query
 * (a resolver may be slow or absent, and tests must stay off the
 * network).  A host not listed there keeps its short name and mydomain
 * falls back to "localdomain". */
char *hosts_file_fqdn(const char *path, const char *shortname)
{
	str_t text = STR_INIT;
	char *result = NULL, *cp, *line;

	if (file_read_all_follow(path, &text, 1024 * 1024) < 0) {
		str_release(&text);
		return NULL;
	}
	cp = text.buf;
	while (result == NULL && (line = str_token(&cp, "\n")) != NULL) {
		char *hash = strchr(line, '#'), *lp = line, *tok;
		char *fqdn = NULL;
		int listed = 0, first = 1;
		if (hash)
			*hash = 0;
		while ((tok = str_token(&lp, " \t\r")) != NULL) {
			if (first) {	/* the address */
				first = 0;
				continue;
			}
			if (strcasecmp(tok, shortname) == 0)
				listed = 1;
			else if (fqdn == NULL && strchr(tok, '.') && tok[strlen(tok) - 1] != '.')
				fqdn = tok;
		}
		if (listed && fqdn)
			result = xstrdup(fqdn);
	}
	str_release(&text);
	return result;
}

const char *param_system_hostname(void)
{
	static char *name;
	char buf[256];

	if (name)
		return name;
	if (gethostname(buf, sizeof(buf) - 1) < 0 || buf[0] == 0)
		bcopy_str(buf, sizeof(buf), "localhost");
	buf[sizeof(buf) - 1] = 0;
	name = xstrdup(buf);
	if (strchr(name, '.') == NULL) {
		char *fqdn = hosts_file_fqdn(PARAM_HOSTS_FILE, name);
		if (fqdn) {
			free(name);
			name = fqdn;
		}
	}
	str_lower(name);
	return name;
}

/* mydomain: the effective myhostname minus its first label. */
static const char *compute_mydomain(void)
{
	static str_t dom = STR_INIT;
	const char *host = pconfig_get_str("myhostname");
	const char *dot = strchr(host, '.');
	str_set(&dom, dot && dot[1] != 0 ? dot + 1 : "localdomain");
	return str_cstr(&dom);
}
