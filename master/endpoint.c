/* Local endpoint paths; see endpoint.h. */
#include "endpoint.h"
#include "str.h"

char *master_local_path(const mastercf_entry_t *e)
{
	str_t p = STR_INIT;
	str_setf(&p, "%s/%s", e->private_svc ? "private" : "public", e->service);
	return str_steal(&p);
}
