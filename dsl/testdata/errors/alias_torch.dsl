// Names a torch param group gives a meaning of its own (the group's
// parameters, torch.optim's flags, the LR schedulers' records) are no
// hyper's name or alias; neither is a hyper's own name its alias. lr, betas,
// weight_decay, eps and momentum may be: a hyper may be those quantities.

optimizer alias_torch

hyper lr = 1e-3 in [0, inf)
hyper b1 = 0.9 in [0, 1) alias betas[0]
hyper b2 = 0.999 in [0, 1) alias betas[1]
hyper mu = 0.9 in [0, 1) alias momentum
hyper p = 1 alias params                 // ERROR col=19 "^alias params of hyper p is a key of torch's param groups \(the group's parameters\); choose another name$"
hyper q = 1 alias fused                  // ERROR col=19 "^alias fused of hyper q is a key of torch's param groups \(a flag of every torch.optim optimizer, which its load_state_dict reads\)"
hyper v = 1 alias maximize               // ERROR col=19 "^alias maximize of hyper v is a key of torch's param groups"
hyper w = 1 alias initial_lr             // ERROR col=19 "^alias initial_lr of hyper w is a key of torch's param groups \(the learning rate every LR scheduler starts from, which it writes\)"
hyper x = 1 alias max_lr[0]              // ERROR col=19 "^alias max_lr of hyper x is a key of torch's param groups"
hyper z = 1 alias z                      // ERROR col=19 "^alias z of hyper z is the name of a hyper$"
hyper min_lr = 0                         // ERROR col=7 "^hyper min_lr: its name is a key of torch's param groups \(OneCycleLR's final learning rate, which it writes\); choose another$"
hyper capturable = 0 alias weights       // ERROR col=7 "^hyper capturable: its name is a key of torch's param groups \(a flag of every torch.optim optimizer"

step {
	theta = theta - (lr + b1 + b2 + mu + p + q + v + w + x + z + min_lr + capturable) * g
}
