// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_dmabuf_exp - test helper: a dynamic dma-buf exporter ("GPU-like"
 * memory) for the VM tests.  Its user interface is in stl_dmabuf_exp.h.
 *
 * A buffer is an array of equal, physically contiguous chunks (compound
 * pages, so that an importer may take references on single 4 KiB pages of
 * a chunk).  The exporter is dynamic: map_dma_buf runs under the
 * reservation lock, and STL_EXP_IOC_MOVE swaps the chunks (or revokes the
 * memory) under that lock and calls dma_buf_move_notify().  A move happens
 * whether the buffer is pinned or not (the test wants move_notify even where
 * a real exporter would keep pinned memory in place; the distribution
 * kernels, without CONFIG_DMABUF_MOVE_NOTIFY, pin on every map), except that
 * a static attachment (no move_notify) makes STL_EXP_MOVE fail with EBUSY.
 *
 * Locks: the reservation lock, then buf->lock (the chunk array).  The fault
 * handler takes buf->lock under the mmap lock; buf->lock is never held
 * across copy_to_user() or while taking the reservation lock.
 *
 * Only for the VM tests; never load it anywhere else.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "stl_dmabuf_exp.h"

#define STL_EXP_MAX_SIZE	(1ULL << 30)

struct stl_exp_buf {
	struct mutex lock;		/* chunks, against the fault handler */
	struct page **chunks;		/* written under resv and lock */
	unsigned long nchunks;
	unsigned int order;
	size_t chunk;
	size_t size;
	bool revoked;			/* written under resv */
	atomic_t attachments;
	atomic_t static_attachments;	/* attachments without move_notify */
	atomic_t pins;
	atomic64_t maps;
	atomic64_t unmaps;
	atomic64_t moves;
};

static void stl_exp_free_chunks(struct page **chunks, unsigned long n,
				unsigned int order)
{
	unsigned long i;

	if (!chunks)
		return;
	for (i = 0; i < n; i++)
		if (chunks[i])
			__free_pages(chunks[i], order);
	kvfree(chunks);
}

static struct page **stl_exp_alloc_chunks(unsigned long n, unsigned int order)
{
	struct page **chunks;
	unsigned long i;

	chunks = kvcalloc(n, sizeof(*chunks), GFP_KERNEL);
	if (!chunks)
		return NULL;
	for (i = 0; i < n; i++) {
		chunks[i] = alloc_pages(GFP_KERNEL | __GFP_COMP | __GFP_ZERO |
					__GFP_NOWARN, order);
		if (!chunks[i]) {
			stl_exp_free_chunks(chunks, i, order);
			return NULL;
		}
		cond_resched();
	}
	return chunks;
}

static int stl_exp_attach(struct dma_buf *dmabuf,
			  struct dma_buf_attachment *attach)
{
	struct stl_exp_buf *buf = dmabuf->priv;

	atomic_inc(&buf->attachments);
	if (!attach->importer_ops)
		atomic_inc(&buf->static_attachments);
	return 0;
}

static void stl_exp_detach(struct dma_buf *dmabuf,
			   struct dma_buf_attachment *attach)
{
	struct stl_exp_buf *buf = dmabuf->priv;

	if (!attach->importer_ops)
		atomic_dec(&buf->static_attachments);
	atomic_dec(&buf->attachments);
}

static int stl_exp_pin(struct dma_buf_attachment *attach)
{
	struct stl_exp_buf *buf = attach->dmabuf->priv;

	atomic_inc(&buf->pins);
	return 0;
}

static void stl_exp_unpin(struct dma_buf_attachment *attach)
{
	struct stl_exp_buf *buf = attach->dmabuf->priv;

	atomic_dec(&buf->pins);
}

static struct sg_table *stl_exp_map(struct dma_buf_attachment *attach,
				    enum dma_data_direction dir)
{
	struct stl_exp_buf *buf = attach->dmabuf->priv;
	struct scatterlist *sg;
	struct sg_table *sgt;
	unsigned int i;
	int ret;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (buf->revoked)
		return ERR_PTR(-ENODEV);

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, buf->nchunks, GFP_KERNEL);
	if (ret)
		goto err_free;
	/* the chunk array changes only under the reservation lock we hold */
	for_each_sgtable_sg(sgt, sg, i)
		sg_set_page(sg, buf->chunks[i], buf->chunk, 0);
	ret = dma_map_sgtable(attach->dev, sgt, dir, 0);
	if (ret)
		goto err_table;
	atomic64_inc(&buf->maps);
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void stl_exp_unmap(struct dma_buf_attachment *attach,
			  struct sg_table *sgt, enum dma_data_direction dir)
{
	struct stl_exp_buf *buf = attach->dmabuf->priv;

	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
	atomic64_inc(&buf->unmaps);
}

static void stl_exp_destroy(struct stl_exp_buf *buf)
{
	stl_exp_free_chunks(buf->chunks, buf->nchunks, buf->order);
	mutex_destroy(&buf->lock);
	kfree(buf);
}

static void stl_exp_release(struct dma_buf *dmabuf)
{
	stl_exp_destroy(dmabuf->priv);
}

static vm_fault_t stl_exp_fault(struct vm_fault *vmf)
{
	struct stl_exp_buf *buf = vmf->vma->vm_private_data;
	unsigned long per_chunk = buf->chunk >> PAGE_SHIFT;
	unsigned long pfn;
	vm_fault_t ret;

	if (vmf->pgoff >= buf->size >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	/* buf->lock: the pfn is inserted before a move can zap and free it */
	mutex_lock(&buf->lock);
	pfn = page_to_pfn(buf->chunks[vmf->pgoff / per_chunk]) +
	      vmf->pgoff % per_chunk;
	ret = vmf_insert_pfn(vmf->vma, vmf->address, pfn);
	mutex_unlock(&buf->lock);
	return ret;
}

static const struct vm_operations_struct stl_exp_vm_ops = {
	.fault = stl_exp_fault,
};

static int stl_exp_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct stl_exp_buf *buf = dmabuf->priv;

	if (vma->vm_pgoff || vma->vm_end - vma->vm_start > buf->size)
		return -EINVAL;
	/* a private writable PFNMAP mapping would be a COW mapping */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
#endif
	vma->vm_ops = &stl_exp_vm_ops;
	vma->vm_private_data = buf;
	return 0;
}

static const struct dma_buf_ops stl_exp_ops = {
	.attach = stl_exp_attach,
	.detach = stl_exp_detach,
	.pin = stl_exp_pin,
	.unpin = stl_exp_unpin,
	.map_dma_buf = stl_exp_map,
	.unmap_dma_buf = stl_exp_unmap,
	.release = stl_exp_release,
	.mmap = stl_exp_mmap,
};

static long stl_exp_create(void __user *uarg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct stl_exp_create arg;
	struct stl_exp_buf *buf;
	struct dma_buf *dmabuf;
	int fd;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.chunk != SZ_4K && arg.chunk != SZ_64K && arg.chunk != SZ_2M) ||
	    !arg.size || arg.size % arg.chunk || arg.size > STL_EXP_MAX_SIZE) {
		pr_warn_ratelimited("create: bad size %llu / chunk %llu\n",
				    arg.size, arg.chunk);
		return -EINVAL;
	}

	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	mutex_init(&buf->lock);
	buf->size = arg.size;
	buf->chunk = arg.chunk;
	buf->nchunks = arg.size / arg.chunk;
	buf->order = get_order(arg.chunk);
	buf->chunks = stl_exp_alloc_chunks(buf->nchunks, buf->order);
	if (!buf->chunks) {
		stl_exp_destroy(buf);
		return -ENOMEM;
	}

	exp_info.ops = &stl_exp_ops;
	exp_info.size = buf->size;
	exp_info.flags = O_RDWR;
	exp_info.priv = buf;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		stl_exp_destroy(buf);
		return PTR_ERR(dmabuf);
	}
	/* from here on, dma_buf_put() frees buf (stl_exp_release) */

	/*
	 * What dma_buf_fd() does, split so that a failing copy_to_user()
	 * leaves no descriptor behind.
	 */
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	arg.fd = fd;
	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		put_unused_fd(fd);
		dma_buf_put(dmabuf);
		return -EFAULT;
	}
	fd_install(fd, dmabuf->file);
	return 0;
}

/* The dma-buf behind @fd, if it is one of ours (a reference: dma_buf_put) */
static struct dma_buf *stl_exp_get(int fd)
{
	struct dma_buf *dmabuf = dma_buf_get(fd);

	if (IS_ERR(dmabuf))
		return dmabuf;
	if (dmabuf->ops != &stl_exp_ops) {
		dma_buf_put(dmabuf);
		return ERR_PTR(-EINVAL);
	}
	return dmabuf;
}

static int stl_exp_do_move(struct dma_buf *dmabuf)
{
	struct stl_exp_buf *buf = dmabuf->priv;
	struct page **fresh, **old;
	unsigned long i;

	/* the sizes never change: allocate outside the reservation lock */
	fresh = stl_exp_alloc_chunks(buf->nchunks, buf->order);
	if (!fresh)
		return -ENOMEM;

	dma_resv_lock(dmabuf->resv, NULL);
	if (atomic_read(&buf->static_attachments)) {
		/* a static importer keeps its mapping and is never told */
		dma_resv_unlock(dmabuf->resv);
		stl_exp_free_chunks(fresh, buf->nchunks, buf->order);
		return -EBUSY;
	}
	/*
	 * Zap the user mappings first and copy under buf->lock: a CPU write
	 * through a mapping either lands before the copy or faults (and waits
	 * here) into the new chunks, none is lost.
	 */
	mutex_lock(&buf->lock);
	unmap_mapping_range(dmabuf->file->f_mapping, 0, 0, 1);
	for (i = 0; i < buf->nchunks; i++) {
		memcpy(page_address(fresh[i]), page_address(buf->chunks[i]),
		       buf->chunk);
		cond_resched();
	}
	old = buf->chunks;
	buf->chunks = fresh;
	mutex_unlock(&buf->lock);
	/* importers unmap (and may map the new chunks) in move_notify */
	dma_buf_move_notify(dmabuf);
	atomic64_inc(&buf->moves);
	dma_resv_unlock(dmabuf->resv);

	stl_exp_free_chunks(old, buf->nchunks, buf->order);
	return 0;
}

static void stl_exp_do_revoke(struct dma_buf *dmabuf)
{
	struct stl_exp_buf *buf = dmabuf->priv;

	dma_resv_lock(dmabuf->resv, NULL);
	WRITE_ONCE(buf->revoked, true);
	dma_buf_move_notify(dmabuf);
	atomic64_inc(&buf->moves);
	dma_resv_unlock(dmabuf->resv);
}

static long stl_exp_move(void __user *uarg)
{
	struct stl_exp_move arg;
	struct dma_buf *dmabuf;
	int ret = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	dmabuf = stl_exp_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);

	switch (arg.mode) {
	case STL_EXP_MOVE:
		ret = stl_exp_do_move(dmabuf);
		break;
	case STL_EXP_REVOKE:
		stl_exp_do_revoke(dmabuf);
		break;
	default:
		pr_warn_ratelimited("move: bad mode %u\n", arg.mode);
		ret = -EINVAL;
		break;
	}
	dma_buf_put(dmabuf);
	return ret;
}

static long stl_exp_info(void __user *uarg)
{
	struct stl_exp_info arg;
	struct stl_exp_buf *buf;
	struct dma_buf *dmabuf;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	dmabuf = stl_exp_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	buf = dmabuf->priv;

	mutex_lock(&buf->lock);
	arg.first_pfn = page_to_pfn(buf->chunks[0]);
	mutex_unlock(&buf->lock);
	arg.revoked = READ_ONCE(buf->revoked);
	arg.maps = atomic64_read(&buf->maps);
	arg.unmaps = atomic64_read(&buf->unmaps);
	arg.moves = atomic64_read(&buf->moves);
	arg.attachments = atomic_read(&buf->attachments);
	dma_buf_put(dmabuf);

	if (copy_to_user(uarg, &arg, sizeof(arg)))
		return -EFAULT;
	return 0;
}

static long stl_exp_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case STL_EXP_IOC_CREATE:
		return stl_exp_create(uarg);
	case STL_EXP_IOC_MOVE:
		return stl_exp_move(uarg);
	case STL_EXP_IOC_INFO:
		return stl_exp_info(uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations stl_exp_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = stl_exp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice stl_exp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "stl_dmabuf_exp",
	.fops = &stl_exp_fops,
	.mode = 0600,
};

static int __init stl_exp_init(void)
{
	return misc_register(&stl_exp_misc);
}

static void __exit stl_exp_exit(void)
{
	misc_deregister(&stl_exp_misc);
}

module_init(stl_exp_init);
module_exit(stl_exp_exit);

MODULE_DESCRIPTION("Stellar test helper: a dynamic dma-buf exporter that moves on request");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(DMA_BUF);
