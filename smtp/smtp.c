/* smtp(8): the SMTP client delivery agent (smtp_agent.c). */
#include "smtp.h"

int main(int argc, char **argv)
{
	smtp_agent_main(argc, argv, false);
}
