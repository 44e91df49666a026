/* lmtp(8): the LMTP client delivery agent (RFC 2033): the smtp agent and
 * engine (smtp_agent.c) speaking LMTP to unix:PATH and inet:HOST:PORT
 * next hops.  doc/lmtp.md. */
#include "smtp.h"

int main(int argc, char **argv)
{
	smtp_agent_main(argc, argv, true);
}
