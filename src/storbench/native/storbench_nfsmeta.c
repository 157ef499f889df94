/*
 * storbench_nfsmeta: file metadata operations on an NFS export through libnfs, as a fio external engine.
 *
 * fio's filecreate, filestat and filedelete engines time open(O_CREAT), stat(2) and unlink(2) on a mounted
 * filesystem; fio's nfs engine (libnfs) reads and writes but has no metadata operations. This engine does what
 * the file engines do, over libnfs, so an export can be measured where the machine has no NFS client:
 * nfsmeta_op=create times nfs_creat (the file closed after, untimed), stat times nfs_stat64, delete times
 * nfs_unlink. Each file is one operation; its latency goes to fio's completion-latency histogram exactly as the
 * file engines record it. File names are fio's (filename_format), as paths inside the export; the job's
 * directory is made (untimed) before its first file. With unlink=1, fio removes the files after the job
 * through unlink_file (nfs_unlink); the engine's cleanup then removes the job's now empty directories.
 *
 * Built by `storbench setup --labs` against the fio source it builds; loaded with
 * ioengine=external:/path/to/storbench-nfsmeta.so.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <nfsc/libnfs.h>

#include "fio.h"
#include "optgroup.h"

enum { OP_CREATE = 1, OP_STAT = 2, OP_DELETE = 3 };

struct nfsmeta_options {
	void *pad;
	char *nfs_url;
	unsigned int op;
	unsigned int missing_ok;
};

struct nfsmeta_data {
	struct nfs_context *nfs;
	enum fio_ddir ddir;
	char made[PATH_MAX]; /* the last directory made, so each job makes its directory once */
};

static struct fio_option options[] = {
	{
		.name = "nfsmeta_url",
		.lname = "nfsmeta_url",
		.type = FIO_OPT_STR_STORE,
		.off1 = offsetof(struct nfsmeta_options, nfs_url),
		.help = "nfs://server/export",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "nfsmeta_op",
		.lname = "nfsmeta_op",
		.type = FIO_OPT_STR,
		.off1 = offsetof(struct nfsmeta_options, op),
		.help = "create, stat or delete",
		.def = "stat",
		.posval = {
			{ .ival = "create", .oval = OP_CREATE, .help = "nfs_creat each file" },
			{ .ival = "stat", .oval = OP_STAT, .help = "nfs_stat64 each file" },
			{ .ival = "delete", .oval = OP_DELETE, .help = "nfs_unlink each file" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "nfsmeta_missing_ok",
		.lname = "nfsmeta_missing_ok",
		.type = FIO_OPT_BOOL,
		.off1 = offsetof(struct nfsmeta_options, missing_ok),
		.help = "delete: a file that is not there is no error (storbench's clearing of what a job may have left)",
		.def = "0",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{ .name = NULL },
};

static int nfsmeta_setup(struct thread_data *td)
{
	td->o.use_thread = 0; /* one libnfs context per job process */
	return 0;
}

static int nfsmeta_init(struct thread_data *td)
{
	struct nfsmeta_options *o = td->eo;
	struct nfsmeta_data *data;
	struct nfs_url *url;
	int ret;

	if (!o->nfs_url) {
		log_err("storbench_nfsmeta: nfsmeta_url is required\n");
		return 1;
	}
	data = calloc(1, sizeof(*data));
	data->ddir = td_read(td) ? DDIR_READ : DDIR_WRITE;
	data->nfs = nfs_init_context();
	if (!data->nfs) {
		log_err("storbench_nfsmeta: no libnfs context\n");
		free(data);
		return 1;
	}
	url = nfs_parse_url_dir(data->nfs, o->nfs_url);
	if (!url) {
		log_err("storbench_nfsmeta: bad url %s: %s\n", o->nfs_url, nfs_get_error(data->nfs));
		nfs_destroy_context(data->nfs);
		free(data);
		return 1;
	}
	ret = nfs_mount(data->nfs, url->server, url->path);
	nfs_destroy_url(url);
	if (ret) {
		log_err("storbench_nfsmeta: mount of %s failed: %s\n", o->nfs_url, nfs_get_error(data->nfs));
		nfs_destroy_context(data->nfs);
		free(data);
		return 1;
	}
	td->io_ops_data = data;
	return 0;
}

/* Make every directory above ``path`` (untimed), once per directory. */
static int make_parents(struct nfsmeta_data *data, const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (!strcmp(dir, data->made))
		return 0;
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		nfs_mkdir(data->nfs, dir); /* exists already: fine */
		*p = '/';
	}
	nfs_mkdir(data->nfs, dir);
	snprintf(data->made, sizeof(data->made), "%s", dir);
	return 0;
}

static int nfsmeta_open(struct thread_data *td, struct fio_file *f)
{
	struct nfsmeta_options *o = td->eo;
	struct nfsmeta_data *data = td->io_ops_data;
	struct nfsfh *fh = NULL;
	struct nfs_stat_64 st;
	struct timespec start;
	int ret;

	make_parents(data, f->file_name);
	fio_gettime(&start, NULL);
	switch (o->op) {
	case OP_CREATE:
		ret = nfs_creat(data->nfs, f->file_name, 0600, &fh);
		for (int again = 0; again < 3 && (ret == -ENOENT || ret == -ESTALE); again++) {
			/* another job (or client) removed the shared directory after it emptied it, between our
			 * mkdir and this create: ENOENT when it went before our lookup, ESTALE (the server's
			 * NFS3ERR_STALE) when it went between the lookup and the create, whose directory handle is
			 * then gone. Make it again (untimed) and time the create anew; a few times, as the other's
			 * cleanup can race the retry too */
			data->made[0] = '\0';
			make_parents(data, f->file_name);
			fio_gettime(&start, NULL);
			ret = nfs_creat(data->nfs, f->file_name, 0600, &fh);
		}
		break;
	case OP_STAT:
		ret = nfs_stat64(data->nfs, f->file_name, &st);
		break;
	default:
		ret = nfs_unlink(data->nfs, f->file_name);
		/* clearing: a file that is not there is cleared already, and so is one whose directory another job
		 * removed once it was empty (ESTALE: its handle gone) */
		if ((ret == -ENOENT || ret == -ESTALE) && o->missing_ok)
			ret = 0;
		break;
	}
	if (ret) {
		log_err("storbench_nfsmeta: %s of %s failed: %s\n", o->op == OP_CREATE ? "create" :
			o->op == OP_STAT ? "stat" : "delete", f->file_name, nfs_get_error(data->nfs));
		td_verror(td, -ret, "nfsmeta");
		return 1;
	}
	add_clat_sample(td, data->ddir, ntime_since_now(&start), 0, 0, 0, 0);
	if (fh)
		nfs_close(data->nfs, fh);
	return 0;
}

static int nfsmeta_close(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static int nfsmeta_unlink(struct thread_data *td, struct fio_file *f)
{
	struct nfsmeta_data *data = td->io_ops_data;

	if (data)
		nfs_unlink(data->nfs, f->file_name);
	return 0;
}

static int nfsmeta_invalidate(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static enum fio_q_status nfsmeta_queue(struct thread_data *td, struct io_u *io_u)
{
	return FIO_Q_COMPLETED;
}

static int nfsmeta_get_file_size(struct thread_data *td, struct fio_file *f)
{
	f->real_file_size = td_min_bs(td); /* one operation per file */
	return 0;
}

static void nfsmeta_cleanup(struct thread_data *td)
{
	struct nfsmeta_data *data = td->io_ops_data;
	char dir[PATH_MAX];
	char *slash;

	if (!data)
		return;
	/* the job's directory and those above it, each only once empty (the last job removes the shared ones) */
	snprintf(dir, sizeof(dir), "%s", data->made);
	while (dir[0] && strcmp(dir, "/")) {
		if (nfs_rmdir(data->nfs, dir))
			break;
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			break;
		*slash = '\0';
	}
	nfs_umount(data->nfs);
	nfs_destroy_context(data->nfs);
	free(data);
	td->io_ops_data = NULL;
}

struct ioengine_ops ioengine = {
	.name = "storbench_nfsmeta",
	.version = FIO_IOOPS_VERSION,
	.setup = nfsmeta_setup,
	.init = nfsmeta_init,
	.cleanup = nfsmeta_cleanup,
	.queue = nfsmeta_queue,
	.open_file = nfsmeta_open,
	.close_file = nfsmeta_close,
	.unlink_file = nfsmeta_unlink,
	.invalidate = nfsmeta_invalidate,
	.get_file_size = nfsmeta_get_file_size,
	.flags = FIO_DISKLESSIO | FIO_SYNCIO | FIO_FAKEIO | FIO_NOSTATS | FIO_NOFILEHASH | FIO_NODISKUTIL,
	.options = options,
	.option_struct_size = sizeof(struct nfsmeta_options),
};
