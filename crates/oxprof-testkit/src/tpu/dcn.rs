//! DCN collectives between TPU slices as XProf's `megascale_stats` reads them: three
//! rendezvous (an all-reduce, an all-gather, a one-to-one transfer), each a `send`,
//! `send-done`, `recv`, `recv-done` of host-transfer ops whose event metadata carries
//! `hlo_category` (`host send`/`host recv`) and, on the send, a `dcn_collective_info`
//! proto; and their instructions in the program's HLO, with channel ids and the frontend
//! attributes `_xla_host_transfer_rendezvous` and `_xla_megascale_transfer_type`.

use super::{BF16, F32, U32, attributes, instruction, parameter, shape, token, tuple, wire};
use crate::{PlaneBuilder, Value};
use prost::Message;

/// One DCN collective: its rendezvous, transfer type, data shape, channel ids of the send
/// and recv pair, and the number of its first op.
#[derive(Debug)]
pub struct Collective {
    /// Rendezvous name (what `megascale_stats` lists).
    pub rendezvous: &'static str,
    /// `_xla_megascale_transfer_type`.
    pub transfer_type: &'static str,
    /// Element type of the data.
    pub element_type: i32,
    /// Dimensions of the data.
    pub dims: &'static [i64],
    /// Channel of the send pair.
    pub send_channel: i64,
    /// Channel of the recv pair.
    pub recv_channel: i64,
    /// Number of the first op (`send.<first>`).
    pub first: i64,
}

/// The collectives.
pub const COLLECTIVES: [Collective; 3] = [
    Collective {
        rendezvous: "dcn_all_reduce_grads",
        transfer_type: "ALL_REDUCE",
        element_type: F32,
        dims: &[256, 1024],
        send_channel: 1,
        recv_channel: 2,
        first: 1,
    },
    Collective {
        rendezvous: "dcn_all_gather_params",
        transfer_type: "ALL_GATHER",
        element_type: BF16,
        dims: &[512, 384],
        send_channel: 3,
        recv_channel: 4,
        first: 5,
    },
    Collective {
        rendezvous: "dcn_one_to_one_activations",
        transfer_type: "ONE_TO_ONE",
        element_type: F32,
        dims: &[1000, 3],
        send_channel: 5,
        recv_channel: 6,
        first: 9,
    },
];

/// The op names of a collective: send, send-done, recv, recv-done.
pub fn op_names(c: &Collective) -> [String; 4] {
    let n = c.first;
    [format!("send.{n}"), format!("send-done.{}", n + 1), format!("recv.{}", n + 2), format!("recv-done.{}", n + 3)]
}

/// The event metadata name of a host-transfer op.
pub fn long_name(name: &str) -> String {
    format!("%{name} = {name}()")
}

/// The `dcn_collective_info` of a collective's send: four endpoints for the all-reduce,
/// two for the all-gather, one pair for the one-to-one transfer.
pub fn collective_info(index: usize) -> Vec<u8> {
    let endpoint = |slice_id, device_id| wire::Endpoint { slice_id, device_id };
    let info = match index {
        0 => wire::DcnCollectiveInfoProto {
            transfer_type: 5,
            endpoint_groups: vec![wire::EndpointGroup { endpoints: (0..4).map(|s| endpoint(s, 0)).collect() }],
            one_to_one_groups: Vec::new(),
        },
        1 => wire::DcnCollectiveInfoProto {
            transfer_type: 4,
            endpoint_groups: vec![wire::EndpointGroup { endpoints: vec![endpoint(0, 1), endpoint(1, 1)] }],
            one_to_one_groups: Vec::new(),
        },
        _ => wire::DcnCollectiveInfoProto {
            transfer_type: 2,
            endpoint_groups: Vec::new(),
            one_to_one_groups: vec![wire::OneToOneGroup {
                source: Some(endpoint(0, 0)),
                destination: Some(endpoint(1, 0)),
            }],
        },
    };
    info.encode_to_vec()
}

/// Declares the collectives' ops on a device plane (program `program_id`).
pub fn declare_ops(p: &mut PlaneBuilder, program_id: u64) {
    for (index, c) in COLLECTIVES.iter().enumerate() {
        for (k, name) in op_names(c).iter().enumerate() {
            let long_name = long_name(name);
            p.event_display_name(&long_name, name);
            let category = if k < 2 { "host send" } else { "host recv" };
            p.event_metadata_stat(&long_name, "hlo_category", category);
            p.event_metadata_stat(&long_name, "program_id", program_id);
            if k == 0 {
                p.event_metadata_stat(&long_name, "dcn_collective_info", Value::Bytes(collective_info(index)));
            }
        }
    }
}

/// The collectives' instructions for an entry computation, with ids below 300: an
/// `after-all` token (id 100), then for collective `i` a parameter (number `i`, id
/// `200 + i`), a send of it and a recv into a tuple sequenced by the token (ids
/// `10(i+1)` ..), and the received array (`get-tuple-element.<i>`).
#[derive(Debug, Default)]
pub struct Instructions {
    /// The instructions, operands first.
    pub instructions: Vec<wire::HloInstructionProto>,
    /// The parameters' shapes (numbers 0, 1, 2).
    pub parameters: Vec<wire::ShapeProto>,
    /// The received arrays' shapes.
    pub results: Vec<wire::ShapeProto>,
    /// The received arrays' instruction ids.
    pub result_ids: Vec<i64>,
}

/// See [`Instructions`].
pub fn instructions() -> Instructions {
    let mut out = Instructions {
        instructions: vec![instruction("token.0", "after-all", 100, &[], token())],
        ..Default::default()
    };
    for (index, c) in COLLECTIVES.iter().enumerate() {
        let data = || shape(c.element_type, c.dims);
        let [send, send_done, recv, recv_done] = op_names(c);
        let base = 10 * (index as i64 + 1);
        let param_id = 200 + index as i64;
        out.parameters.push(data());
        out.instructions.push(parameter(&format!("p{index}"), param_id, index as i64, data()));
        let rendezvous =
            [("_xla_host_transfer_rendezvous", c.rendezvous), ("_xla_megascale_transfer_type", c.transfer_type)];
        out.instructions.push(wire::HloInstructionProto {
            channel_id: c.send_channel,
            frontend_attributes: attributes(&rendezvous),
            ..instruction(&send, "send", base, &[param_id, 100], tuple(vec![data(), shape(U32, &[]), token()]))
        });
        out.instructions.push(wire::HloInstructionProto {
            channel_id: c.send_channel,
            ..instruction(&send_done, "send-done", base + 1, &[base], token())
        });
        out.instructions.push(wire::HloInstructionProto {
            channel_id: c.recv_channel,
            frontend_attributes: attributes(&rendezvous[..1]),
            ..instruction(&recv, "recv", base + 2, &[100], tuple(vec![data(), shape(U32, &[]), token()]))
        });
        out.instructions.push(wire::HloInstructionProto {
            channel_id: c.recv_channel,
            ..instruction(&recv_done, "recv-done", base + 3, &[base + 2], tuple(vec![data(), token()]))
        });
        out.instructions.push(wire::HloInstructionProto {
            tuple_index: 0,
            ..instruction(&format!("get-tuple-element.{index}"), "get-tuple-element", base + 4, &[base + 3], data())
        });
        out.results.push(data());
        out.result_ids.push(base + 4);
    }
    out
}
