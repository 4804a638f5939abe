// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_stall - test helper: a Soft-RoCE parent that stops completing
 * Stellar's registration work requests.
 *
 * While loaded, every poll of an rxe CQ created by a kernel user without a
 * completion handler (Stellar's registration CQs, ib_create_cq(..., NULL,
 * ...)) reports no completion, and the completions it took are lost: to
 * Stellar the parent never finishes a REG_MR or LOCAL_INV.  Every other CQ
 * works as before.  Only for the VM tests; never load it anywhere else.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/module.h>
#include <rdma/ib_verbs.h>

static atomic_t stl_stall_swallowed = ATOMIC_INIT(0);

struct stl_stall_call {
	struct ib_cq *cq;
};

static int stl_stall_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct stl_stall_call *c = (struct stl_stall_call *)ri->data;

	c->cq = (struct ib_cq *)regs->di;	/* x86-64: first argument */
	return 0;
}

static int stl_stall_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct stl_stall_call *c = (struct stl_stall_call *)ri->data;

	if (c->cq && !c->cq->comp_handler && !c->cq->uobject &&
	    (long)regs->ax > 0) {
		atomic_add((int)regs->ax, &stl_stall_swallowed);
		regs->ax = 0;
	}
	return 0;
}

static struct kretprobe stl_stall_probe = {
	.kp.symbol_name = "rxe_poll_cq",
	.entry_handler = stl_stall_entry,
	.handler = stl_stall_ret,
	.data_size = sizeof(struct stl_stall_call),
	.maxactive = 64,
};

static int __init stl_stall_init(void)
{
	int ret = register_kretprobe(&stl_stall_probe);

	if (ret)
		pr_err("cannot probe rxe_poll_cq: %d\n", ret);
	else
		pr_info("registration completions of rxe parents are now lost\n");
	return ret;
}

static void __exit stl_stall_exit(void)
{
	unregister_kretprobe(&stl_stall_probe);
	pr_info("unloaded; %d completions were lost\n",
		atomic_read(&stl_stall_swallowed));
}

module_init(stl_stall_init);
module_exit(stl_stall_exit);

MODULE_DESCRIPTION("Stellar test helper: an rxe parent that stops completing registrations");
MODULE_LICENSE("GPL");
